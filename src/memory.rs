//! Large output buffers. Decoding writes hundreds of megabytes into fresh
//! memory; with 4 KiB pages the page faults cost more than the decoding.
//! Buffers of several megabytes ask the kernel for transparent huge pages
//! (`MADV_HUGEPAGE`, honoured when THP is in `madvise` or `always` mode).
//!
//! Above glibc's 32 MiB mmap threshold every decode would also map, fault in
//! and zero fresh column memory, and unmap it when Arrow frees the table
//! (measured: decode time doubling or worse, depending on the heap's state).
//! So large byte buffers handed to Arrow go back to a small bounded pool when
//! Arrow drops them, and the next decode writes into memory already mapped.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow_buffer::Buffer;

/// Byte buffers at least this large are pooled.
const POOL_MIN_BYTES: usize = 4 << 20;
/// At most this much memory is kept for reuse, in at most this many buffers.
const POOL_MAX_BYTES: usize = 256 << 20;
const POOL_MAX_BUFFERS: usize = 8;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty byte vector with room for `capacity` bytes: a pooled one when a
/// large enough one is free, else a fresh (huge-page) one.
pub fn take_bytes(capacity: usize) -> Vec<u8> {
    if capacity >= POOL_MIN_BYTES {
        if let Ok(mut pool) = POOL.lock() {
            let best = pool.iter().enumerate().filter(|(_, v)| v.capacity() >= capacity).min_by_key(|(_, v)| v.capacity()).map(|(i, _)| i);
            if let Some(i) = best {
                let mut v = pool.swap_remove(i);
                v.clear();
                return v;
            }
        }
    }
    big_vec(capacity)
}

/// Owns a pooled vector while Arrow uses its bytes; gives it back on drop.
struct Pooled(Vec<u8>);

impl Drop for Pooled {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        if v.capacity() > POOL_MAX_BYTES {
            return;
        }
        if let Ok(mut pool) = POOL.lock() {
            // Newest in, oldest out: the buffers of the latest decodes are the
            // ones the next decode is likely to want.
            pool.push(v);
            while pool.len() > POOL_MAX_BUFFERS || pool.iter().map(Vec::capacity).sum::<usize>() > POOL_MAX_BYTES {
                pool.remove(0);
            }
        }
    }
}

/// An Arrow buffer of `v`'s bytes; large ones return to the pool when freed.
pub fn into_buffer(v: Vec<u8>) -> Buffer {
    if v.capacity() < POOL_MIN_BYTES {
        return Buffer::from_vec(v);
    }
    let len = v.len();
    let owner = Arc::new(Pooled(v));
    let Some(ptr) = NonNull::new(owner.0.as_ptr() as *mut u8) else {
        return Buffer::from_vec(Vec::<u8>::new());
    };
    // SAFETY: `ptr` is the heap allocation of the vector inside `owner`, valid
    // for `len` initialised bytes; the vector is never touched again until
    // `owner` drops, which Arrow does only after the last use of the buffer.
    unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
}

/// Buffers at least this large get huge pages.
const HUGE_PAGE_THRESHOLD: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// A vector with room for `capacity` items, backed by huge pages when large.
pub fn big_vec<T>(capacity: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(v.as_mut_ptr().cast::<u8>(), v.capacity() * std::mem::size_of::<T>());
    v
}

/// Reserve room for `additional` more bytes, from the pool when `v` is empty.
pub fn reserve_bytes(v: &mut Vec<u8>, additional: usize) {
    if v.capacity() == 0 {
        *v = take_bytes(additional);
    } else {
        v.reserve(additional);
    }
}

/// Reserve room for `additional` more items, with huge pages when the vector
/// is still empty and the room large (growing a filled vector keeps `reserve`).
pub fn reserve<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() == 0 {
        *v = big_vec(additional);
    } else {
        v.reserve(additional);
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    // Miri cannot call madvise; it is only advice, so skipping it changes nothing.
    if len < HUGE_PAGE_THRESHOLD || cfg!(miri) {
        return;
    }
    // Only whole 2 MiB pages inside the allocation.
    let start = ptr.addr();
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + len) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // The page-aligned pointer is derived from `ptr` (not cast from an
        // integer), so it keeps the allocation's provenance.
        let aligned = ptr.wrapping_add(first - start);
        // SAFETY: [first, end) lies inside the allocation just made, which this
        // process owns; MADV_HUGEPAGE only changes how the kernel backs those
        // pages, never their contents, and failure is harmless (ignored).
        unsafe {
            libc::madvise(aligned.cast::<libc::c_void>(), end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_come_back_to_the_pool() {
        let mut v = take_bytes(8 << 20);
        v.extend_from_slice(b"column bytes");
        let ptr = v.as_ptr();
        let buffer = into_buffer(v);
        assert_eq!(buffer.as_slice(), b"column bytes");
        drop(buffer);
        // Other tests may take pooled buffers concurrently; look for ours.
        let found = POOL.lock().map(|p| p.iter().any(|v| v.as_ptr() == ptr)).unwrap_or(false);
        let reused = take_bytes(8 << 20);
        assert!(found || reused.capacity() >= 8 << 20);
        assert!(reused.is_empty());
        assert_eq!(into_buffer(b"small".to_vec()).as_slice(), b"small");
    }

    #[test]
    fn big_vectors_have_the_asked_capacity() {
        let v: Vec<u64> = big_vec(1 << 20);
        assert!(v.capacity() >= 1 << 20);
        let mut w: Vec<u8> = Vec::new();
        reserve(&mut w, 10 << 20);
        assert!(w.capacity() >= 10 << 20);
        w.extend_from_slice(&[1, 2, 3]);
        reserve(&mut w, 5);
        assert_eq!(w, [1, 2, 3]);
    }
}
