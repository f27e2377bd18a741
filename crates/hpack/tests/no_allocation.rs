//! Checks the decoder's promise that a long-lived connection decodes
//! without touching the heap once its buffers have grown.
//!
//! This needs a counting global allocator, hence its own test binary (and
//! the only `unsafe` in the crate's tree: `GlobalAlloc` is an unsafe trait).
//! The count is per thread so that other tests running in parallel do not
//! disturb it.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::hex;
use metron_hpack::Decoder;

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the allocator also runs while thread locals are torn down.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn a_warm_decoder_never_allocates() {
    // RFC 7541 C.6: Huffman literals, indexing, dynamic references and
    // evictions. Replaying it leaves the table as the first pass did, so the
    // three blocks can cycle on one decoder forever.
    let blocks = [
        hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 \
             66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        ),
        hex("4883 640e ffc1 c0bf"),
        hex(
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a \
             839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 \
             72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ),
    ];
    let mut decoder = Decoder::new(256);
    let mut octets = 0usize;
    let mut count = |name: &[u8], value: &[u8]| octets += name.len() + value.len();
    for _ in 0..10 {
        for block in &blocks {
            decoder.decode(block, &mut count).unwrap();
        }
    }

    // The counter itself works: a fresh decoder allocates as it warms up.
    let before = allocations();
    Decoder::new(256).decode(&blocks[0], &mut count).unwrap();
    assert!(allocations() > before);

    let before = allocations();
    for _ in 0..1_000 {
        for block in &blocks {
            decoder.decode(block, &mut count).unwrap();
        }
    }
    assert_eq!(allocations() - before, 0);
    assert!(octets > 0);
    assert_eq!(decoder.table_size(), 215);
}
