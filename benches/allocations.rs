//! The bench target `allocations`: the workloads of `benches/workloads.rs`
//! under a counting global allocator, each once at a tenth of its count (the
//! timed runs are `benches/timed.rs`, without this allocator).
//!
//! Prints `commutator <workload> allocations_per_op <N>` per workload and
//! `commutator w6_scale bytes_per_idle_actor <N>`;
//! `cargo bench --bench allocations -- w3` runs one.

mod workloads;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering::Relaxed};

/// The system allocator, counting allocations and live bytes.
struct Counting {
    allocations: AtomicU64,
    live_bytes: AtomicIsize,
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocations.fetch_add(1, Relaxed);
        self.live_bytes.fetch_add(layout.size() as isize, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.allocations.fetch_add(1, Relaxed);
        self.live_bytes.fetch_add(layout.size() as isize, Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.live_bytes.fetch_sub(layout.size() as isize, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.allocations.fetch_add(1, Relaxed);
        self.live_bytes
            .fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

impl workloads::Counters for Counting {
    fn allocations(&self) -> u64 {
        self.allocations.load(Relaxed)
    }
    fn live_bytes(&self) -> isize {
        self.live_bytes.load(Relaxed)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting {
    allocations: AtomicU64::new(0),
    live_bytes: AtomicIsize::new(0),
};

fn main() {
    workloads::main(Some(&GLOBAL));
}
