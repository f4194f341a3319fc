//! Payloads of every size cross an `Export` whole (feature `nats`): it
//! encodes into a buffer of its own and cuts each payload off it, small ones
//! sharing an allocation, large ones taking theirs with them; the receiving
//! `Import` hands them to its locality in batches. Against a real
//! nats-server, as in tests/nats.rs (skipped without one, a failure under
//! `COMMUTATOR_REQUIRE_NATS=1`), under a deadline.
#![cfg(feature = "nats")]

mod nats_support;

use nats_support::actors::*;
use nats_support::*;
use std::sync::mpsc;

/// The text of note `seq`: small, empty, or larger than an export's buffer
/// (16 KiB), in turn.
fn text(seq: u32) -> String {
    match seq % 3 {
        0 => format!("small {seq}"),
        1 => String::new(),
        _ => format!("{seq}:").repeat(10_000),
    }
}

#[test]
fn payloads_smaller_and_larger_than_an_exports_buffer_cross_whole_and_in_order() {
    with_server(
        "payloads_smaller_and_larger_than_an_exports_buffer_cross_whole_and_in_order",
        &[],
        LIMIT,
        move |url| {
            let (a, b) = (connect(&url), connect(&url));
            let (tx, rx) = mpsc::channel();
            let (receiver, ()) = Node::start("receiver", move |system, root| {
                let sink = system
                    .spawn(root, Sink::<Note> { to: tx, dead: None })
                    .finish()?;
                system
                    .spawn(root, b.import::<Note>("test.sizes", &sink))
                    .finish()?;
                Ok(())
            });
            let (sender, export) = Node::start("sender", move |system, root| {
                system
                    .spawn(root, a.export().message::<Note>("test.sizes"))
                    .finish()
            });
            const N: u32 = 600;
            for seq in 0..N {
                let note = Note {
                    from: text(seq),
                    seq,
                };
                export.send(note).expect("the sender's locality runs");
            }
            for seq in 0..N {
                let note = next(&rx, WAIT, "note");
                assert_eq!(note.seq, seq, "in the order sent");
                assert!(note.from == text(seq), "note {seq} whole");
            }
            assert!(sender.stop().is_ok());
            assert!(receiver.stop().is_ok());
        },
    );
}
