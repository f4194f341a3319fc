//! The `commutator-tokio` side of the bench target `nats` (features `nats`
//! and `tokio`): each locality a `TokioLocality` on a current-thread runtime
//! of its own thread, its connection made by `Nats::connect_async` on that
//! runtime (no bridge thread, no hand-off between threads).

use super::{
    Calculator, Counter, Go, LIMIT, Note, Producer, Ready, Requester, Square, Stop, Stopper,
    options, runtime,
};
use commutator::nats::Nats;
use commutator::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

/// `commutator_pubsub` with each side a `TokioLocality` whose connection
/// runs on its own runtime.
pub(crate) fn pubsub(url: &str, n: u64) -> f64 {
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let ready_b = ready_tx.clone();
    let (stop_b, (), thread_b) = node(url.to_string(), n, move |b, locality, root| {
        let counter = locality
            .spawn(
                root,
                Counter {
                    n,
                    seen: 0,
                    done: done_tx,
                },
            )
            .finish()?;
        locality
            .spawn(root, b.import::<Note>("bench.pubsub", &counter))
            .finish()?;
        locality.spawn(root, Ready(ready_b)).finish()?;
        Ok(())
    });
    let (started_tx, started) = mpsc::channel();
    let (stop_a, producer, thread_a) = node(url.to_string(), n, move |a, locality, root| {
        let export = locality
            .spawn(root, a.export().message::<Note>("bench.pubsub"))
            .finish()?;
        locality.spawn(root, Ready(ready_tx)).finish()?;
        locality
            .spawn(
                root,
                Producer {
                    to: export,
                    n,
                    sent: 0,
                    started: started_tx,
                },
            )
            .finish()
    });
    for _ in 0..2 {
        ready.recv_timeout(LIMIT).expect("ready");
    }
    producer.send(Go).expect("go");
    let start = started.recv_timeout(LIMIT).expect("started");
    let end = done.recv_timeout(LIMIT).expect("every note arrived");
    for (stop, thread) in [(stop_a, thread_a), (stop_b, thread_b)] {
        let _ = stop.send(Stop);
        let _ = thread.join();
    }
    end.duration_since(start).as_secs_f64()
}

/// A `TokioLocality` on a current-thread runtime of its own thread, with
/// its connection on that runtime too (`Nats::connect_async`): `setup`
/// spawns under the root and returns what the bench needs.
fn node<T: Send + 'static>(
    url: String,
    n: u64,
    setup: impl FnOnce(Nats, &mut Locality, &Address) -> commutator::Result<T> + Send + 'static,
) -> (Address, T, std::thread::JoinHandle<()>) {
    use commutator::backend::tokio::TokioLocality;
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let run = async move {
            let nats = Nats::connect_async(options(&url, n)).await?;
            let mut app = TokioLocality::new(Locality::new())?;
            let locality = app.locality();
            let root = locality
                .spawn_root(Supervisor)
                .supervisor(SupervisorConfig::default())
                .finish()?;
            let stopper = locality.spawn(&root, Stopper).finish()?;
            let value = setup(nats, locality, &root)?;
            let _ = tx.send((stopper, value));
            app.run().await
        };
        if let Err(e) = runtime().block_on(run) {
            eprintln!("nats bench: a tokio node failed: {e:#}");
        }
    });
    let (stopper, value) = rx.recv_timeout(LIMIT).expect("the node was set up");
    (stopper, value, thread)
}

/// `commutator_request` with each side a `TokioLocality` whose connection
/// runs on its own runtime (no bridge thread).
pub(crate) fn request(url: &str, n: u64, in_flight: u64) -> f64 {
    let (stop_b, (), thread_b) = node(url.to_string(), n, move |b, locality, root| {
        let calculator = locality.spawn(root, Calculator).finish()?;
        locality
            .spawn(root, b.service("bench", &calculator).request::<Square>())
            .finish()?;
        Ok(())
    });
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let (stop_a, requester, thread_a) = node(url.to_string(), n, move |a, locality, root| {
        let remote = a
            .remote("bench")
            .request::<Square>()
            .wait(Duration::from_secs(30));
        let remote = locality.spawn(root, remote).finish()?;
        locality.spawn(root, Ready(ready_tx)).finish()?;
        let requester = Requester {
            remote,
            n,
            in_flight,
            sent: 0,
            answered: 0,
            start: None,
            done: done_tx,
        };
        locality.spawn(root, requester).finish()
    });
    ready.recv_timeout(LIMIT).expect("ready");
    requester.send(Go).expect("go");
    let took = done.recv_timeout(LIMIT).expect("every request answered");
    for (stop, thread) in [(stop_a, thread_a), (stop_b, thread_b)] {
        let _ = stop.send(Stop);
        let _ = thread.join();
    }
    took.as_secs_f64()
}
