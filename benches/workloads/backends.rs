//! `w1` and `w3` with the same actors (`benches/workloads.rs`), on a
//! locality driven by a backend instead of a `System`: a tokio
//! current-thread runtime (as actix's `System`), or a calloop `EventLoop`.
//! Printed as `w1_pingpong_tokio`, `w3_reqresp_calloop` and so on. A module
//! of `workloads`, compiled with the features `tokio` or `calloop`.

use super::*;

/// Runs the backends' workloads that `run` selects.
pub(super) fn main(run: &dyn Fn(&str) -> bool) {
    #[cfg(feature = "tokio")]
    {
        if run("w1_pingpong_tokio") {
            w1(Backend::Tokio);
        }
        if run("w3_reqresp_tokio") {
            w3(Backend::Tokio);
        }
    }
    #[cfg(feature = "calloop")]
    {
        if run("w1_pingpong_calloop") {
            w1(Backend::Calloop);
        }
        if run("w3_reqresp_calloop") {
            w3(Backend::Calloop);
        }
    }
}

#[derive(Clone, Copy)]
enum Backend {
    #[cfg(feature = "tokio")]
    Tokio,
    #[cfg(feature = "calloop")]
    Calloop,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "tokio")]
            Backend::Tokio => "tokio",
            #[cfg(feature = "calloop")]
            Backend::Calloop => "calloop",
        }
    }
}

fn tree() -> (Locality, Address) {
    let mut locality = Locality::new();
    let root = locality
        .spawn_root(Supervisor)
        .supervisor(SupervisorConfig::default())
        .finish()
        .expect("root");
    (locality, root)
}

/// Brings the tree up, then times the kick and the run on `backend`
/// (the runtime or loop is made before the clock starts).
fn timed_on<M: Send + 'static>(
    backend: Backend,
    workload: &str,
    count: u64,
    mut locality: Locality,
    to: &Address,
    kick: M,
) {
    locality.run_until_idle(Instant::now());
    let name = format!("{workload}_{}", backend.name());
    match backend {
        #[cfg(feature = "tokio")]
        Backend::Tokio => {
            use commutator::backend::tokio::TokioLocality;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let mut app = TokioLocality::new(locality).expect("tokio locality");
            DONE.with(|d| d.set(None));
            mark();
            let t0 = Instant::now();
            app.locality()
                .send(to, kick)
                .map_err(|e| e.error)
                .expect("kick");
            runtime.block_on(app.run()).expect("run");
            let end = DONE.with(Cell::get).unwrap_or_else(Instant::now);
            report(&name, count, end.duration_since(t0).as_secs_f64());
        }
        #[cfg(feature = "calloop")]
        Backend::Calloop => {
            use commutator::backend::calloop::LocalitySource;
            let mut event_loop: calloop::EventLoop<'_, bool> =
                calloop::EventLoop::try_new().expect("loop");
            let mut source = LocalitySource::new(locality).expect("calloop locality");
            DONE.with(|d| d.set(None));
            mark();
            let t0 = Instant::now();
            source
                .locality()
                .send(to, kick)
                .map_err(|e| e.error)
                .expect("kick");
            event_loop
                .handle()
                .insert_source(source, |result, _, ended| {
                    result.expect("run");
                    *ended = true;
                })
                .expect("insert");
            let mut ended = false;
            while !ended {
                event_loop.dispatch(None, &mut ended).expect("dispatch");
            }
            let end = DONE.with(Cell::get).unwrap_or_else(Instant::now);
            report(&name, count, end.duration_since(t0).as_secs_f64());
        }
    }
}

fn w1(backend: Backend) {
    let (mut locality, root) = tree();
    let a = locality
        .spawn(&root, Player::default())
        .finish()
        .expect("a");
    let other = Some(a.clone());
    let b = locality.spawn(&root, Player { other }).finish().expect("b");
    let count = n(N_PINGPONG);
    timed_on(
        backend,
        "w1_pingpong",
        count,
        locality,
        &a,
        Go(Some(b), count),
    );
}

fn w3(backend: Backend) {
    let (mut locality, root) = tree();
    let server = locality.spawn(&root, Server).finish().expect("server");
    let client = Client {
        server,
        i: 0,
        target: n(N_REQRESP),
    };
    let client = locality.spawn(&root, client).finish().expect("client");
    timed_on(
        backend,
        "w3_reqresp",
        n(N_REQRESP),
        locality,
        &client,
        Go(None, 0),
    );
}
