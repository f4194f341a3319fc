//! Misuse of the API: every refused call returns its documented `ErrorCode`
//! and changes nothing. Here: sends to a finished locality, I/O and poll
//! registration, shutdowns, a system with no actor, requests and resources.
//! Spawning: `misuse_spawn.rs`; subscriptions: `misuse_subscriptions.rs`.

mod common;

use common::misuse::{code, finished_locality, probe, stores, with_tester};
use common::{Clock, Idle, Log, Slot, root_on, root_on_l0};
use commutator::mio::net::TcpListener;
use commutator::mio::{Interest, Poll, Token};
use commutator::{
    Actor, ActorState, Address, Context, ErrorCode, RESERVED_TOKENS, Request, RequestId, System,
};
use std::time::Duration;

#[test]
fn locality_send_after_finish_hands_the_message_back() {
    let (mut locality, root) = finished_locality();
    let before = locality.stats();

    let err = locality.send(&root, String::from("too late")).unwrap_err();

    assert_eq!(err.error.code(), ErrorCode::LocalityFinished);
    assert_eq!(err.message, "too late");
    assert_eq!(locality.stats(), before);
}

#[test]
fn address_send_to_a_finished_locality_hands_the_message_back() {
    let (locality, root) = finished_locality();
    assert!(root.is_closed());

    let err = root.send(String::from("too late")).unwrap_err();
    assert_eq!(err.error.code(), ErrorCode::LocalityFinished);
    assert_eq!(err.message, "too late");

    // The same once the locality itself is dropped.
    let (mut other, other_root) = root_on("L1");
    other.run_until_idle(Clock::new().at(0));
    assert!(!other_root.is_closed());
    drop(other);
    assert!(other_root.is_closed());
    let err = other_root.send(7u32).unwrap_err();
    assert_eq!(
        (err.error.code(), err.message),
        (ErrorCode::LocalityFinished, 7)
    );
    drop(locality);
}

/// Sends a `u32` to another locality's address when told.
struct Forwarder {
    to: Address,
}

struct Forward;

impl Actor for Forwarder {
    fn init_start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.subscribe(Self::on_forward);
    }
}

impl Forwarder {
    fn on_forward(&mut self, _: &Forward, ctx: &mut Context<'_, Self>) {
        ctx.send(&self.to, 7u32);
    }
}

#[test]
fn a_send_from_an_actor_to_a_finished_locality_is_dropped_and_counted() {
    let clock = Clock::new();
    let (_gone, gone_root) = finished_locality();
    let (mut locality, root) = root_on("L1");
    let forwarder = locality
        .spawn(&root, Forwarder { to: gone_root })
        .finish()
        .unwrap();
    locality.run_until_idle(clock.at(0));

    locality.send(&forwarder, Forward).unwrap();
    locality.run_until_idle(clock.at(0));

    assert_eq!(locality.stats().dropped_closed, 1);
}

#[test]
fn registering_with_a_reserved_token_fails_with_token_clash() {
    let poll = Poll::new().unwrap();
    let (mut locality, _) = root_on_l0();
    let before = locality.stats();

    for token in [RESERVED_TOKENS, RESERVED_TOKENS + 1, usize::MAX] {
        let err = locality
            .register(poll.registry(), Token(token))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenClash);
        assert!(!locality.handles(Token(token)));
    }

    assert_eq!(locality.stats(), before);
    // Nothing was registered: a valid token still works.
    locality
        .register(poll.registry(), Token(RESERVED_TOKENS - 1))
        .unwrap();
    assert!(locality.handles(Token(RESERVED_TOKENS - 1)));
}

#[test]
fn registering_twice_fails_with_already_registered_on_poll() {
    let poll = Poll::new().unwrap();
    let other_poll = Poll::new().unwrap();
    let (mut locality, _) = root_on_l0();
    locality.register(poll.registry(), Token(3)).unwrap();
    let before = locality.stats();

    let err = locality.register(poll.registry(), Token(4)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    let err = locality
        .register(other_poll.registry(), Token(3))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);

    assert_eq!(locality.stats(), before);
    assert!(locality.handles(Token(3)));
    assert!(!locality.handles(Token(4)));
}

#[test]
fn shutting_down_a_stale_address_fails_with_stale_address() {
    let clock = Clock::new();
    let (mut locality, root) = root_on_l0();
    let leaf = locality.spawn(&root, Idle).name("leaf").finish().unwrap();
    locality.run_until_idle(clock.at(0));
    locality.shutdown(&leaf).unwrap();
    locality.run_until_idle(clock.at(0));
    let before = locality.stats();

    let err = locality.shutdown(&leaf).unwrap_err();

    assert_eq!(err.code(), ErrorCode::StaleAddress);
    assert_eq!(err.context(), Some("L0/leaf#2"));
    assert_eq!(locality.stats(), before);
}

#[test]
fn shutting_down_an_address_of_another_locality_fails_with_foreign_address() {
    let (mut locality, _) = root_on_l0();
    let (there, their_root) = root_on("L1");
    let (before_here, before_there) = (locality.stats(), there.stats());

    let err = locality.shutdown(&their_root).unwrap_err();

    assert_eq!(err.code(), ErrorCode::ForeignAddress);
    assert_eq!(locality.stats(), before_here);
    assert_eq!(there.stats(), before_there);
}

#[test]
fn running_a_system_with_no_actor_fails_with_invalid_argument() {
    let mut system = System::named("S").unwrap();
    let before = system.stats();

    let err = system.run().unwrap_err();

    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(system.stats(), before);
}

struct Ping;

impl Request for Ping {
    type Response = ();
}

#[test]
fn request_via_a_reply_address_of_another_locality_fails_with_invalid_argument() {
    let log = Log::new();
    let (mut l, root, tester) = with_tester(&log);
    let (there, their_root) = root_on("L1");
    let before = (stores(&l), there.stats());

    let target = root.clone();
    let said = probe(
        &mut l,
        &tester,
        move |ctx| {
            let e = ctx
                .request_via(&their_root, &target, Ping, Duration::from_millis(10))
                .unwrap_err();
            format!("{:?}: {}", e.code(), e.context().unwrap_or(""))
        },
        &log,
    );

    assert_eq!(
        said,
        "InvalidArgument: L1/root#1 is not an address of L0/tester#2"
    );
    assert_eq!((stores(&l), there.stats()), before, "no request, no timer");
}

#[test]
fn releasing_a_resource_never_acquired_fails_with_invalid_argument() {
    let log = Log::new();
    let (mut l, _, tester) = with_tester(&log);
    let before = stores(&l);

    let said = probe(
        &mut l,
        &tester,
        |ctx| {
            let first = code(ctx.release_resource(3));
            format!("{first}, held {}", ctx.resources_held(3))
        },
        &log,
    );

    assert_eq!(said, "Err(InvalidArgument), held 0");
    assert_eq!(stores(&l), before);
    assert_eq!(l.state_of(&tester), Some(ActorState::Operational));
}

#[test]
fn register_io_on_a_locality_without_a_poll_fails_with_not_registered() {
    let log = Log::new();
    let (mut l, _, tester) = with_tester(&log);
    let before = stores(&l);

    let said = probe(
        &mut l,
        &tester,
        |ctx| {
            let socket = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            code(ctx.register_io(socket, Interest::READABLE))
        },
        &log,
    );

    assert_eq!(said, "Err(NotRegistered)");
    assert_eq!(stores(&l), before, "no I/O slot is left behind");
    assert_eq!(l.state_of(&tester), Some(ActorState::Operational));
}

/// Requests `Ping` from an address nobody serves, and hands out the id.
struct Asker {
    to: Address,
    id: Slot<RequestId>,
}

impl Actor for Asker {
    fn on_start(&mut self, ctx: &mut Context<'_, Self>) {
        let id = ctx.request(&self.to, Ping, Duration::from_secs(60));
        self.id.set(id);
    }
}

#[test]
fn cancelling_another_actors_request_returns_false_and_changes_nothing() {
    let log = Log::new();
    let (mut l, root, tester) = with_tester(&log);
    let id = Slot::new();
    l.spawn(
        &root,
        Asker {
            to: root.clone(),
            id: id.clone(),
        },
    )
    .finish()
    .unwrap();
    l.run_until_idle(Clock::new().at(0));
    let before = stores(&l);
    assert_eq!(l.stats().requests, 1);

    let theirs = id.get();
    let said = probe(
        &mut l,
        &tester,
        move |ctx| format!("{}", ctx.cancel_request(theirs)),
        &log,
    );

    assert_eq!(said, "false");
    assert_eq!(stores(&l), before, "the request is still pending");
}

#[test]
fn a_second_locality_on_one_poll_is_refused_and_changes_nothing() {
    let poll = Poll::new().unwrap();
    let (mut a, _) = root_on("A");
    let (mut b, _) = root_on("B");
    a.register(poll.registry(), Token(1)).unwrap();
    let before = b.stats();

    let err = b.register(poll.registry(), Token(2)).unwrap_err();

    assert_eq!(err.code(), ErrorCode::AlreadyRegisteredOnPoll);
    assert_eq!(b.stats(), before);
    assert!(!b.handles(Token(2)));
    assert!(a.handles(Token(1)), "the first one keeps its waker");
    let other = Poll::new().unwrap();
    b.register(other.registry(), Token(2)).unwrap();
    assert!(b.handles(Token(2)));
}
