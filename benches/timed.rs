//! The bench target `workloads`: the workloads of `benches/workloads.rs`,
//! timed, on the system allocator as is (nothing counts allocations here:
//! see `benches/allocations.rs`).
//!
//! Prints `commutator <workload> <count> <seconds> <rate_per_sec>` per
//! workload; `cargo bench --bench workloads -- w3` runs one.

mod workloads;

fn main() {
    workloads::main(None);
}
