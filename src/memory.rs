//! Large output buffers. Decoding writes hundreds of megabytes into fresh
//! memory; with 4 KiB pages the page faults cost more than the decoding.
//! Buffers of several megabytes ask the kernel for transparent huge pages
//! (`MADV_HUGEPAGE`, honoured when THP is in `madvise` or `always` mode).

/// Buffers at least this large get huge pages.
const HUGE_PAGE_THRESHOLD: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// A vector with room for `capacity` items, backed by huge pages when large.
pub fn big_vec<T>(capacity: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(v.as_mut_ptr().cast::<u8>(), v.capacity() * std::mem::size_of::<T>());
    v
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
