//! What the fuzz targets share: how an input's leading bytes choose the
//! points where the wire bytes are split into reads, and an allocator that
//! counts live heap bytes so a target can check what a parser holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most split points one input can ask for; more add little, since every
/// target also feeds its wire one byte at a time.
pub const MAX_SPLITS: usize = 7;

/// Reads a split count and that many little-endian `u16` cut positions from
/// the front of `data`; returns them with the bytes after them.
pub fn take_splits(data: &[u8]) -> (Vec<u16>, &[u8]) {
    let Some((&count, rest)) = data.split_first() else {
        return (Vec::new(), data);
    };
    let count = usize::from(count) % (MAX_SPLITS + 1);
    let (positions, rest) = rest.split_at((count * 2).min(rest.len()));
    let cuts = positions
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    (cuts, rest)
}

/// `wire` cut into reads at `cuts` (as from [`take_splits`]), each taken
/// modulo one more than the wire length; repeats make empty reads, which
/// are a case too.
pub fn pieces<'a>(wire: &'a [u8], cuts: &[u16]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) % (wire.len() + 1))
        .collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for cut in cuts {
        out.push(&wire[from..cut]);
        from = cut;
    }
    out.push(&wire[from..]);
    out
}

/// The system allocator, keeping count of the bytes currently allocated.
/// Targets run single-threaded, so the difference in [`live`] across a call
/// is what that call kept.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Heap bytes allocated and not yet freed, by everything in the process.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}
