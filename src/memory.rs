//! Large output buffers. Decoding writes hundreds of megabytes; faulting
//! in fresh memory can cost more than the decoding.
//!
//! No transparent huge pages are asked for (`MADV_HUGEPAGE` was measured and
//! dropped). Measured on the 2-vCPU VMs this runs on, a 48 MB decode
//! into fresh memory: one thread 22-135 ms with huge pages (bimodal, the
//! kernel time swinging 12-124 ms) against 27-32 ms without; two threads
//! 57-83 ms against 17-22 ms. Our reading: fresh huge pages there come from
//! guest memory the host has not backed yet, and 4 KiB pages are recycled.
//!
//! Above glibc's mmap threshold (128 KiB, adapting up to 32 MiB) every
//! decode would also map, fault in and zero fresh column memory, and unmap it
//! when Arrow frees the table: measured, a 1 MiB fetch took 256 page faults
//! per call and decode time doubled or worse, depending on the heap's state.
//! So column buffers handed to Arrow go back to a small bounded pool (one per
//! element type) when Arrow drops them, and the next decode writes into
//! memory already mapped.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_buffer::Buffer;

/// Buffers of at least this many bytes are pooled (smaller ones come from
/// malloc's heap, which has them mapped already).
const POOL_MIN_BYTES: usize = 64 << 10;
/// At most this many bytes are kept for reuse over all pools (counted as
/// the bytes each buffer held when it came back: what its last use touched,
/// so about what it keeps resident), and at most this many buffers per
/// element type. Bounded so that streaming a large log stays well inside
/// its memory budget (benches/bench_memory.py). Values parsed while
/// decoding cut the output every few megabytes (`values::PARSE_CHUNK_BYTES`),
/// each chunk with a handful of pooled columns: 100 MB of JSON values makes
/// ~50 chunks. Measured on 4 MiB chunks (one thread, back to back), 32
/// buffers per type left 10,400 page faults per call and 256 left 6,800.
/// The bytes stay at 128 MiB: with 256, a typed decode right after a plain
/// one of the same 33 MB input faulted 700 pages instead of 12,300 (the
/// plain one's ~90 MB value buffer no longer evicts the typed one's chunk
/// buffers), but streaming a 2 GiB folder peaked at 556-591 MiB.
const POOL_MAX_BYTES: usize = 128 << 20;
const POOL_MAX_BUFFERS: usize = 256;
/// A pooled buffer serves requests down to 1/`POOL_FIT` of its capacity.
const POOL_FIT: usize = 4;

/// Bytes held by all pools together.
static POOLED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Element types of pooled column buffers: plain numbers, any bit pattern
/// valid, so Arrow may view their bytes.
pub trait Poolable: Copy + Send + Sync + std::panic::RefUnwindSafe + 'static {
    fn pool() -> &'static Mutex<Vec<Pooled<Self>>>;
}

macro_rules! poolable {
    ($($t:ty),*) => {$(
        impl Poolable for $t {
            fn pool() -> &'static Mutex<Vec<Pooled<$t>>> {
                static POOL: Mutex<Vec<Pooled<$t>>> = Mutex::new(Vec::new());
                &POOL
            }
        }
    )*};
}
poolable!(u8, i32, i64, u128);

fn bytes_of<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// An empty vector with room for `capacity` items: a pooled one when a large
/// enough one is free, else a fresh one.
pub fn take_vec<T: Poolable>(capacity: usize) -> Vec<T> {
    if capacity.saturating_mul(std::mem::size_of::<T>()) >= POOL_MIN_BYTES {
        if let Ok(mut pool) = T::pool().lock() {
            // The smallest that fits; of equal ones, the one with the most
            // pages still mapped. Columns sized alike (values and header
            // values both reserve the input's size) would otherwise swap
            // buffers between decodes and fault in the difference each time.
            // None over `POOL_FIT` times too big: a small column (keys, a
            // little chunk) would take the buffer a large one is about to
            // ask for, and give it back with its spare pages released.
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, p)| p.vec.capacity() >= capacity && p.vec.capacity() / POOL_FIT <= capacity)
                .min_by_key(|(_, p)| (p.vec.capacity(), std::cmp::Reverse(p.resident)))
                .map(|(i, _)| i);
            if let Some(i) = best {
                let Pooled { mut vec, resident } = pool.swap_remove(i);
                POOLED_BYTES.fetch_sub(resident, Ordering::Relaxed);
                vec.clear();
                return vec;
            }
        }
    }
    Vec::with_capacity(capacity)
}

/// A vector in a pool, and the bytes counted for it.
pub struct Pooled<T> {
    vec: Vec<T>,
    resident: usize,
}

/// Owns a vector while Arrow uses its bytes; gives it to the pool on drop.
struct Lent<T: Poolable>(Vec<T>);

impl<T: Poolable> Drop for Lent<T> {
    fn drop(&mut self) {
        let mut vec = std::mem::take(&mut self.0);
        let resident = vec.len() * std::mem::size_of::<T>();
        if resident > POOL_MAX_BYTES {
            return;
        }
        let resident = release_spare(&mut vec);
        let Ok(mut pool) = T::pool().lock() else { return };
        POOLED_BYTES.fetch_add(resident, Ordering::Relaxed);
        // Newest in, oldest out: the buffers of the latest decodes are the
        // ones the next decode is likely to want.
        pool.push(Pooled { vec, resident });
        while pool.len() > POOL_MAX_BUFFERS
            || (POOLED_BYTES.load(Ordering::Relaxed) > POOL_MAX_BYTES && !pool.is_empty())
        {
            let old = pool.remove(0);
            POOLED_BYTES.fetch_sub(old.resident, Ordering::Relaxed);
        }
    }
}

/// An Arrow buffer of `v`'s items; large ones return to the pool when freed.
pub fn into_buffer<T: Poolable + arrow_buffer::ArrowNativeType>(v: Vec<T>) -> Buffer {
    if bytes_of(&v) < POOL_MIN_BYTES {
        return Buffer::from_vec(v);
    }
    let len = v.len() * std::mem::size_of::<T>();
    let owner = Arc::new(Lent(v));
    let Some(ptr) = NonNull::new(owner.0.as_ptr() as *mut u8) else {
        return Buffer::from_vec(Vec::<T>::new());
    };
    // SAFETY: `ptr` is the heap allocation of the vector inside `owner`, valid
    // for `len` initialised bytes (its items are plain numbers) and aligned
    // for `T`; the vector is never touched again until `owner` drops, which
    // Arrow does only after the last use of the buffer.
    unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
}

/// Reserve room for `additional` more items. A vector still small (a new
/// column, or offsets holding their leading 0) moves into a pooled (or
/// fresh) one; a filled one grows with `Vec::reserve`.
pub fn reserve<T: Poolable>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() >= additional {
        return;
    }
    if bytes_of(v) < POOL_MIN_BYTES {
        let mut bigger = take_vec(v.len().saturating_add(additional));
        bigger.extend_from_slice(v);
        *v = bigger;
    } else {
        v.reserve(additional);
    }
}

/// A vector of `n` copies of `value`, in pooled memory when large.
pub fn filled<T: Poolable>(value: T, n: usize) -> Vec<T> {
    let mut v = take_vec(n);
    v.resize(n, value);
    v
}

/// An Arrow scalar buffer of `v`'s items (see [`into_buffer`]).
pub fn into_scalars<T: Poolable + arrow_buffer::ArrowNativeType>(v: Vec<T>) -> arrow_buffer::ScalarBuffer<T> {
    let len = v.len();
    arrow_buffer::ScalarBuffer::new(into_buffer(v), 0, len)
}

/// Spare capacity at least this large is given back when pooled.
const RELEASE_MIN_BYTES: usize = 1 << 20;
/// Base page size (x86-64, most arm64 Linux). Where pages are larger the
/// advice fails on alignment, which is harmless.
const PAGE: usize = 4096;

/// Hand the pages of `v`'s spare capacity (past its length) back to the
/// kernel, so a pooled buffer keeps resident only what its last use wrote
/// and the pool's byte count (lengths) is what it really holds.
/// Returns the bytes the vector may still keep resident: its length, plus
/// spare capacity too small to give back (counted whole: with hundreds of
/// pooled buffers, up to 1 MiB each would add up).
fn release_spare<T>(v: &mut Vec<T>) -> usize {
    let used = v.len() * std::mem::size_of::<T>();
    let spare = (v.capacity() - v.len()) * std::mem::size_of::<T>();
    if spare >= RELEASE_MIN_BYTES {
        release(v.as_mut_ptr().cast::<u8>().wrapping_add(used), spare);
        return used;
    }
    used + spare
}

/// `MADV_DONTNEED` over the whole pages inside `[ptr, ptr + len)`, spare
/// capacity of a vector this process owns: they read as zeros if touched again.
#[cfg(target_os = "linux")]
fn release(ptr: *mut u8, len: usize) {
    // Miri cannot call madvise; skipping it changes no contents a program
    // may read (released pages are spare capacity, never read).
    if cfg!(miri) {
        return;
    }
    let start = ptr.addr();
    let first = start.next_multiple_of(PAGE);
    let end = (start + len) / PAGE * PAGE;
    if end > first {
        // The page-aligned pointer is derived from `ptr` (not cast from an
        // integer), so it keeps the allocation's provenance.
        let aligned = ptr.wrapping_add(first - start);
        // SAFETY: [first, end) lies inside an allocation this process owns,
        // in a vector's spare capacity (`release_spare`): no value lives
        // there, and the pages read as zeros if touched again. Failure is
        // harmless (ignored).
        unsafe {
            libc::madvise(aligned.cast::<libc::c_void>(), end - first, libc::MADV_DONTNEED);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn release(_ptr: *mut u8, _len: usize) {}

/// Ask the CPU to start loading the cache line at `ptr` (x86-64 `prefetcht0`;
/// nothing elsewhere). A hint only: it never faults, so `ptr` may point
/// anywhere, past an allocation's end included.
///
/// Decoding streams input and output through memory: when a call's buffers
/// have left the caches (another library ran in between, ~30 ms is enough on
/// these VMs), each first touch of a 4 KiB page waits for memory, because
/// the hardware prefetchers stop at page boundaries. Loads requested a
/// little ahead overlap that wait with parsing.
#[inline(always)]
pub fn prefetch(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` reads no memory architecturally and cannot fault.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// [`prefetch`] the line `ahead` bytes past the end of `items`: where a
/// growing column's next values will be written.
#[inline(always)]
pub fn prefetch_past<T>(items: &[T], ahead: usize) {
    prefetch(
        items
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(std::mem::size_of_val(items) + ahead),
    );
}

/// `dst.extend_from_slice(src)`, with short `src` (keys, header keys and
/// values: mostly 4-32 bytes) copied inline by two overlapping loads and
/// stores, the way `memcpy` copies them, but without the call and its size
/// dispatch: those were 12 % of a header-heavy decode's instructions
/// (callgrind). Longer slices, or too little spare capacity, go to `memcpy`.
#[inline(always)]
pub fn extend_short(dst: &mut Vec<u8>, src: &[u8]) {
    let n = src.len();
    if n > 32 || dst.capacity() - dst.len() < n {
        dst.extend_from_slice(src);
        return;
    }
    let s = src.as_ptr();
    // SAFETY: every load below lies within `src` (n bytes at `s`) and every
    // store within the n bytes of spare capacity past `dst`'s length, which
    // were checked above; the copies overlap each other only inside `dst`,
    // never `src` (distinct borrows). Those n bytes are then initialised.
    unsafe {
        let d = dst.as_mut_ptr().add(dst.len());
        if n >= 16 {
            let (head, tail) = (
                s.cast::<u128>().read_unaligned(),
                s.add(n - 16).cast::<u128>().read_unaligned(),
            );
            d.cast::<u128>().write_unaligned(head);
            d.add(n - 16).cast::<u128>().write_unaligned(tail);
        } else if n >= 8 {
            let (head, tail) = (
                s.cast::<u64>().read_unaligned(),
                s.add(n - 8).cast::<u64>().read_unaligned(),
            );
            d.cast::<u64>().write_unaligned(head);
            d.add(n - 8).cast::<u64>().write_unaligned(tail);
        } else if n >= 4 {
            let (head, tail) = (
                s.cast::<u32>().read_unaligned(),
                s.add(n - 4).cast::<u32>().read_unaligned(),
            );
            d.cast::<u32>().write_unaligned(head);
            d.add(n - 4).cast::<u32>().write_unaligned(tail);
        } else if n > 0 {
            // 1-3 bytes: first, middle and last (some the same byte).
            let (first, middle, last) = (*s, *s.add(n / 2), *s.add(n - 1));
            *d = first;
            *d.add(n / 2) = middle;
            *d.add(n - 1) = last;
        }
        dst.set_len(dst.len() + n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_come_back_to_the_pool() {
        let mut v = take_vec::<u8>(8 << 20);
        v.extend_from_slice(b"column bytes");
        let ptr = v.as_ptr();
        let buffer = into_buffer(v);
        assert_eq!(buffer.as_slice(), b"column bytes");
        drop(buffer);
        // Other tests may take pooled buffers concurrently; look for ours.
        let found = u8::pool()
            .lock()
            .map(|p| p.iter().any(|e| e.vec.as_ptr() == ptr))
            .unwrap_or(false);
        let reused = take_vec::<u8>(8 << 20);
        assert!(found || reused.capacity() >= 8 << 20);
        assert!(reused.is_empty());
        assert_eq!(into_buffer(b"small".to_vec()).as_slice(), b"small");
    }

    #[test]
    fn short_copies_append_exactly_their_bytes() {
        let src: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37).wrapping_add(1)).collect();
        for n in 0..=40 {
            for spare in [0, n, n + 7, 64] {
                let mut dst = b"prefix".to_vec();
                dst.reserve_exact(spare);
                // Unaligned where there is room to be.
                let piece = &src[40 - n..];
                extend_short(&mut dst, piece);
                let mut want = b"prefix".to_vec();
                want.extend_from_slice(piece);
                assert_eq!(dst, want, "n = {n}, spare = {spare}");
            }
        }
    }

    #[test]
    fn reserved_vectors_keep_their_items() {
        let mut w: Vec<u8> = Vec::new();
        reserve(&mut w, 10 << 20);
        assert!(w.capacity() >= 10 << 20);
        w.extend_from_slice(&[1, 2, 3]);
        reserve(&mut w, 5);
        assert_eq!(w, [1, 2, 3]);
    }
}
