//! A global allocator that counts allocations (and reallocations) made on
//! the current thread, for the tests that check what an operation
//! allocates. A test file installs it:
//!
//! ```ignore
//! mod counting;
//! #[global_allocator]
//! static COUNTING: counting::Counting = counting::Counting;
//! ```
//!
//! and reads [`allocations`] before and after.

use std::alloc::{GlobalAlloc, Layout, System as SystemAlloc};
use std::cell::Cell;

/// Forwards to the system allocator, counting per thread.
pub struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: forwards to the system allocator; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { SystemAlloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { SystemAlloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { SystemAlloc.realloc(ptr, layout, new_size) }
    }
}

/// Allocations made so far on this thread.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}
