//! Tests of the inline queue: every way an envelope leaves it (delivered,
//! dropped by `clear`, dropped with the queue, a panic while delivering),
//! with drop-counting payloads of every shape, and a model test against
//! `VecDeque`.

use super::*;
use proptest::prelude::*;
use std::any::TypeId;
use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

/// What a test context records.
#[derive(Default)]
struct Ctx {
    queue: Queue<Ctx>,
    /// Ids of delivered envelopes, in delivery order.
    delivered: Vec<u64>,
    /// Ids to push again (with id + 1000) when they are delivered.
    echo: Vec<u64>,
}

impl Owner for Ctx {
    fn queue(&mut self) -> &mut Queue<Ctx> {
        &mut self.queue
    }
}

/// Counts its drops in a shared counter.
struct Counted {
    drops: Rc<Cell<u32>>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

/// An envelope with an id, a payload of any shape and a drop counter.
struct Env<P> {
    id: u64,
    payload: P,
    _counted: Counted,
    panics: bool,
}

impl<P: 'static> Envelope<Ctx> for Env<P> {
    fn deliver(self, ctx: &mut Ctx) {
        ctx.delivered.push(self.id);
        if self.panics {
            panic!("envelope {} panics", self.id);
        }
        if ctx.echo.contains(&self.id) {
            let drops = self._counted.drops.clone();
            ctx.queue.push(env(self.id + 1000, (), &drops));
        }
        std::hint::black_box(&self.payload);
    }
}

fn env<P>(id: u64, payload: P, drops: &Rc<Cell<u32>>) -> Env<P> {
    Env {
        id,
        payload,
        _counted: Counted {
            drops: drops.clone(),
        },
        panics: false,
    }
}

#[allow(dead_code)] // carried, never read
#[repr(align(32))]
struct Aligned32([u8; 3]);

#[allow(dead_code)] // carried, never read
#[repr(align(16))]
struct Aligned16(u128);

fn run_all(ctx: &mut Ctx) -> usize {
    let mut n = 0;
    while Queue::run_next(ctx) {
        n += 1;
    }
    n
}

#[test]
fn delivers_in_fifo_order_and_drops_each_envelope_once() {
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    ctx.queue.push(env(1, 7u8, &drops));
    ctx.queue.push(env(2, [1u64; 40], &drops)); // large
    ctx.queue.push(env(3, (), &drops)); // zero-sized payload
    ctx.queue.push(env(4, Aligned32([1, 2, 3]), &drops)); // over-aligned: boxed
    ctx.queue.push(env(5, Aligned16(5), &drops)); // over-aligned: boxed
    ctx.queue.push(env(6, String::from("heap"), &drops));
    assert_eq!(ctx.queue.len(), 6);
    assert_eq!(run_all(&mut ctx), 6);
    assert_eq!(ctx.delivered, [1, 2, 3, 4, 5, 6]);
    assert_eq!(drops.get(), 6);
    assert!(ctx.queue.is_empty());
}

/// The queue may hold envelopes that are not `Send` (an `Rc`, say), so it
/// must not be `Send` or `Sync` itself, whatever its context type is.
#[test]
fn the_queue_is_neither_send_nor_sync() {
    trait AmbiguousIfSend<A> {
        fn some_item() {}
    }
    impl<T: ?Sized> AmbiguousIfSend<()> for T {}
    impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}
    trait AmbiguousIfSync<A> {
        fn some_item() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}
    struct SendCtx(Queue<SendCtx>);
    impl Owner for SendCtx {
        fn queue(&mut self) -> &mut Queue<SendCtx> {
            &mut self.0
        }
    }
    // These resolve only if `Queue<SendCtx>` is neither `Send` nor `Sync`
    // (otherwise the calls are ambiguous and this does not compile).
    <Queue<SendCtx> as AmbiguousIfSend<_>>::some_item();
    <Queue<SendCtx> as AmbiguousIfSync<_>>::some_item();
}

#[test]
fn zero_sized_envelopes_take_one_word_each() {
    struct Zst;
    impl Envelope<Ctx> for Zst {
        fn deliver(self, ctx: &mut Ctx) {
            ctx.delivered.push(0);
        }
    }
    let mut ctx = Ctx::default();
    for _ in 0..100 {
        ctx.queue.push(Zst);
    }
    assert_eq!(ctx.queue.write, 100);
    assert_eq!(run_all(&mut ctx), 100);
}

#[test]
fn clear_drops_what_waits_behind_the_cursor_and_after_a_move() {
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    for id in 0..10 {
        ctx.queue.push(env(id, vec![id; 3], &drops));
    }
    // Two delivered: the cursor is past the start; two more are pushed.
    assert!(Queue::run_next(&mut ctx));
    assert!(Queue::run_next(&mut ctx));
    ctx.queue.push(env(10, Aligned32([0; 3]), &drops));
    ctx.queue.push(env(11, (), &drops));
    assert_eq!(ctx.queue.len(), 10);
    ctx.queue.clear();
    assert_eq!(drops.get(), 12);
    assert!(ctx.queue.is_empty());
    assert_eq!(ctx.queue.capacity_bytes(), 0);
    assert!(!Queue::run_next(&mut ctx));
}

#[test]
fn dropping_the_queue_drops_what_waits() {
    let drops = Rc::new(Cell::new(0));
    {
        let mut ctx = Ctx::default();
        ctx.queue.push(env(1, [0u8; 100], &drops));
        ctx.queue.push(env(2, Aligned32([0; 3]), &drops));
        assert!(Queue::run_next(&mut ctx));
        ctx.queue.push(env(3, (), &drops));
    }
    assert_eq!(drops.get(), 3);
}

#[test]
fn a_panic_while_delivering_drops_that_envelope_once_and_keeps_the_rest() {
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    ctx.queue.push(env(1, 1u32, &drops));
    let mut bad = env(2, String::from("boom"), &drops);
    bad.panics = true;
    ctx.queue.push(bad);
    ctx.queue.push(env(3, 3u32, &drops));
    assert!(Queue::run_next(&mut ctx));
    let caught = catch_unwind(AssertUnwindSafe(|| Queue::run_next(&mut ctx)));
    assert!(caught.is_err());
    assert_eq!(
        drops.get(),
        2,
        "the panicking envelope was dropped by the unwind"
    );
    assert_eq!(ctx.queue.len(), 1);
    assert_eq!(run_all(&mut ctx), 1);
    assert_eq!(ctx.delivered, [1, 2, 3]);
    assert_eq!(drops.get(), 3);
}

#[test]
fn a_panicking_drop_during_clear_leaves_the_rest_queued_and_dropped_once() {
    struct Bomb(Rc<Cell<u32>>);
    impl Drop for Bomb {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
            if self.0.get() == 2 {
                panic!("second drop panics");
            }
        }
    }
    impl Envelope<Ctx> for Bomb {
        fn deliver(self, _: &mut Ctx) {}
    }
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx::default();
    for _ in 0..4 {
        ctx.queue.push(Bomb(drops.clone()));
    }
    assert!(catch_unwind(AssertUnwindSafe(|| ctx.queue.clear())).is_err());
    assert_eq!(drops.get(), 2);
    assert_eq!(ctx.queue.len(), 2);
    drop(ctx);
    assert_eq!(drops.get(), 4, "each dropped exactly once");
}

#[test]
fn pushes_from_inside_a_delivery_come_after_everything_queued_before() {
    let drops = Rc::new(Cell::new(0));
    let mut ctx = Ctx {
        echo: vec![1, 2],
        ..Ctx::default()
    };
    for id in 1..=3 {
        ctx.queue.push(env(id, id, &drops));
    }
    assert_eq!(run_all(&mut ctx), 5);
    assert_eq!(ctx.delivered, [1, 2, 3, 1001, 1002]);
    assert_eq!(drops.get(), 5);
}

/// One step of the model test.
#[derive(Debug, Clone)]
enum Op {
    Push(u8),
    Run,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u8>().prop_map(Op::Push),
        5 => Just(Op::Run),
        1 => Just(Op::Clear),
    ]
}

fn push_shape(ctx: &mut Ctx, id: u64, shape: u8, drops: &Rc<Cell<u32>>) {
    match shape % 6 {
        0 => ctx.queue.push(env(id, (), drops)),
        1 => ctx.queue.push(env(id, id as u8, drops)),
        2 => ctx.queue.push(env(id, [id; 9], drops)),
        3 => ctx.queue.push(env(id, Aligned32([shape; 3]), drops)),
        4 => ctx.queue.push(env(id, Aligned16(u128::from(id)), drops)),
        _ => ctx
            .queue
            .push(env(id, vec![shape; usize::from(shape)], drops)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The queue behaves as a `VecDeque` of ids, and every envelope is
    /// dropped exactly once, whichever way it leaves.
    #[test]
    fn behaves_as_a_vecdeque(ops in proptest::collection::vec(op(), 0..300)) {
        let drops = Rc::new(Cell::new(0));
        let mut ctx = Ctx::default();
        let mut model = VecDeque::new();
        let mut pushed = 0u32;
        for (id, op) in ops.into_iter().enumerate() {
            let id = id as u64;
            match op {
                Op::Push(shape) => {
                    push_shape(&mut ctx, id, shape, &drops);
                    model.push_back(id);
                    pushed += 1;
                }
                Op::Run => {
                    let ran = Queue::run_next(&mut ctx);
                    let expected = model.pop_front();
                    prop_assert_eq!(ran, expected.is_some());
                    if let Some(expected) = expected {
                        prop_assert_eq!(ctx.delivered.last().copied(), Some(expected));
                    }
                }
                Op::Clear => {
                    ctx.queue.clear();
                    model.clear();
                }
            }
            prop_assert_eq!(ctx.queue.len(), model.len());
            prop_assert_eq!(drops.get() as usize, pushed as usize - model.len());
        }
        drop(ctx);
        prop_assert_eq!(drops.get(), pushed);
    }
}

#[test]
fn a_lent_message_comes_back_only_as_its_own_type() {
    let text = String::from("hello");
    let lent = Lent::new(&text);
    assert_eq!(lent.get::<String>().map(String::as_str), Some("hello"));
    assert!(lent.get::<&str>().is_none());
    assert!(lent.get::<u64>().is_none());
    let n = 7u8;
    let lent = Lent::new(&n);
    assert_eq!(lent.get::<u8>(), Some(&7));
    assert!(lent.get::<i8>().is_none());
    let unit = ();
    assert!(Lent::new(&unit).get::<()>().is_some());
    // The type named by another function than `TypeId::of::<M>` itself (as
    // a copy of it in another codegen unit would be): its `TypeId` decides.
    let copy = Lent {
        type_id: || TypeId::of::<String>(),
        ..Lent::new(&text)
    };
    assert!(!std::ptr::fn_addr_eq(
        copy.type_id,
        TypeId::of::<String> as fn() -> TypeId
    ));
    assert_eq!(copy.get::<String>().map(String::as_str), Some("hello"));
    assert!(copy.get::<u64>().is_none());
}

/// An envelope of exactly `N` bytes (alignment 1), filled from its seed.
struct Bytes<const N: usize>([u8; N]);

impl<const N: usize> Bytes<N> {
    fn new(seed: u8) -> Self {
        Bytes(std::array::from_fn(|i| seed.wrapping_add(i as u8)))
    }
}

impl<const N: usize> Envelope<Ctx> for Bytes<N> {
    fn deliver(self, ctx: &mut Ctx) {
        let seed = self.0.first().copied().unwrap_or(0);
        assert_eq!(
            self.0,
            Bytes::<N>::new(seed).0,
            "envelope of {N} bytes changed"
        );
        ctx.delivered.push(N as u64);
    }
}

#[test]
fn envelopes_of_every_size_arrive_intact_whole_words_or_not() {
    // Read by words up to 64 bytes (`BY_WORDS`), with a tail of single
    // bytes when the size is not a multiple of 8; plainly above.
    let mut ctx = Ctx::default();
    ctx.queue.push(Bytes::<0>([]));
    ctx.queue.push(Bytes::<1>::new(1));
    ctx.queue.push(Bytes::<3>::new(2));
    ctx.queue.push(Bytes::<7>::new(3));
    ctx.queue.push(Bytes::<8>::new(4));
    ctx.queue.push(Bytes::<9>::new(5));
    ctx.queue.push(Bytes::<15>::new(6));
    ctx.queue.push(Bytes::<17>::new(7));
    ctx.queue.push(Bytes::<63>::new(8));
    ctx.queue.push(Bytes::<64>::new(9));
    ctx.queue.push(Bytes::<65>::new(10));
    ctx.queue.push(Bytes::<200>::new(11));
    assert_eq!(run_all(&mut ctx), 12);
    assert_eq!(ctx.delivered, [0, 1, 3, 7, 8, 9, 15, 17, 63, 64, 65, 200]);
}

#[path = "queue_room_tests.rs"]
mod room;
