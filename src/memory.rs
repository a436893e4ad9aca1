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
//! So column buffers handed to Arrow go back to a small bounded pool when
//! Arrow drops them, and the next decode writes into memory already mapped.
//! Buffers in the pool are in use as far as malloc knows, so they stay
//! mapped when another library in the process trims malloc's free memory.

use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow_buffer::Buffer;

/// Buffers of at least this many bytes are pooled (smaller ones come from
/// malloc's heap, which has them mapped already). Typed values parsed while
/// decoding come in chunks (`values::PARSE_CHUNK_BYTES`) of a few thousand
/// rows, so most of their columns are 10-100 KiB: pooled, they stay mapped
/// when another library trims malloc's free memory (DuckDB calls
/// `malloc_trim`), which otherwise costs the next decode a page fault per
/// 4 KiB of its output.
const POOL_MIN_BYTES: usize = 4 << 10;
/// At most this many bytes are kept for reuse over all pools (counted as
/// the bytes each buffer held when it came back: what its last use touched,
/// so about what it keeps resident), and at most this many buffers.
/// Bounded so that streaming a large log stays well inside its memory
/// budget (benches/bench_memory.py). When a bound is passed, the buffers
/// that came back longest ago go first, whatever their type: a typed decode
/// (~1,500 columns for 100 MB of JSON values) keeps its buffers after a
/// plain decode of the same input (one ~90 MB value buffer), and the other
/// way round. Evicting within the returning buffer's type instead emptied
/// that type's pool whenever another type held most of the bytes.
/// The bytes stay at 128 MiB: at 256, streaming a 2 GiB folder peaked at
/// 556-591 MiB.
const POOL_MAX_BYTES: usize = 128 << 20;
const POOL_MAX_BUFFERS: usize = 4096;
/// A pooled buffer serves requests down to 1/`POOL_FIT` of its capacity.
const POOL_FIT: usize = 4;
/// Size classes: a buffer of capacity `c` bytes is in class `log2(c)`.
const CLASSES: usize = usize::BITS as usize;

/// Element types of pooled column buffers: plain numbers, any bit pattern
/// valid, so Arrow may view their bytes.
pub trait Poolable: Copy + Send + Sync + std::panic::RefUnwindSafe + 'static {
    fn shelf(pools: &mut Pools) -> &mut Shelf<Self>;
}

/// The free buffers of one element type, by size class, each class oldest first.
pub struct Shelf<T> {
    classes: [VecDeque<Pooled<T>>; CLASSES],
}

impl<T> Shelf<T> {
    const fn new() -> Shelf<T> {
        Shelf {
            classes: [const { VecDeque::new() }; CLASSES],
        }
    }
}

/// A buffer out of the pool, of any element type, to free once the pool's
/// lock is let go (unmapping a large buffer takes a while).
type Evicted = Box<dyn std::any::Any + Send>;

/// A shelf of any element type, for eviction across types.
trait AnyShelf {
    /// When this shelf's oldest buffer came back, and its class.
    fn oldest(&self) -> Option<(u64, usize)>;
    /// Take out the oldest buffer of class `k`, and the bytes counted for it.
    fn pop(&mut self, k: usize) -> Option<(usize, Evicted)>;
}

impl<T: Poolable> AnyShelf for Shelf<T> {
    fn oldest(&self) -> Option<(u64, usize)> {
        self.classes
            .iter()
            .enumerate()
            .filter_map(|(k, class)| class.front().map(|p| (p.seq, k)))
            .min()
    }

    fn pop(&mut self, k: usize) -> Option<(usize, Evicted)> {
        let p = self.classes[k].pop_front()?;
        Some((p.resident, Box::new(p.vec)))
    }
}

/// A vector in a pool, the bytes counted for it, and when it came back.
pub struct Pooled<T> {
    vec: Vec<T>,
    resident: usize,
    seq: u64,
}

/// Free buffers of every element type, within `max_bytes` and `max_buffers`.
pub struct Pools {
    max_bytes: usize,
    max_buffers: usize,
    bytes: usize,
    buffers: usize,
    seq: u64,
    u8s: Shelf<u8>,
    i32s: Shelf<i32>,
    i64s: Shelf<i64>,
    u128s: Shelf<u128>,
    f64s: Shelf<f64>,
}

macro_rules! poolable {
    ($($t:ty => $field:ident),*) => {$(
        impl Poolable for $t {
            fn shelf(pools: &mut Pools) -> &mut Shelf<$t> {
                &mut pools.$field
            }
        }
    )*};
}
poolable!(u8 => u8s, i32 => i32s, i64 => i64s, u128 => u128s, f64 => f64s);

/// The size class of a buffer of `bytes` bytes (`bytes > 0`).
fn class_of(bytes: usize) -> usize {
    (usize::BITS - 1 - bytes.leading_zeros()) as usize
}

impl Pools {
    const fn new(max_bytes: usize, max_buffers: usize) -> Pools {
        Pools {
            max_bytes,
            max_buffers,
            bytes: 0,
            buffers: 0,
            seq: 0,
            u8s: Shelf::new(),
            i32s: Shelf::new(),
            i64s: Shelf::new(),
            u128s: Shelf::new(),
            f64s: Shelf::new(),
        }
    }

    /// A free vector with room for `capacity` items and at most `POOL_FIT`
    /// times that: of the smallest size class holding one, the newest (the
    /// likeliest still in cache). None much too big: a small column (keys,
    /// a little chunk) would take the buffer a large one is about to ask
    /// for, and give it back with its spare pages released.
    fn take<T: Poolable>(&mut self, capacity: usize) -> Option<Vec<T>> {
        let fits = |p: &Pooled<T>| p.vec.capacity() >= capacity && p.vec.capacity() / POOL_FIT <= capacity;
        let lowest = class_of(capacity.saturating_mul(std::mem::size_of::<T>()).max(1));
        let shelf = T::shelf(self);
        let found = (lowest..CLASSES.min(lowest + 3)).find_map(|k| {
            let i = shelf.classes[k].iter().rposition(fits)?;
            shelf.classes[k].remove(i)
        })?;
        self.bytes -= found.resident;
        self.buffers -= 1;
        Some(found.vec)
    }

    /// Keep `vec` (counted as `resident` bytes) for reuse; if that passes a
    /// bound, the buffers that came back longest ago, of any type, leave
    /// (into `evicted`).
    fn put<T: Poolable>(&mut self, vec: Vec<T>, resident: usize, evicted: &mut Vec<Evicted>) {
        let class = class_of(bytes_of(&vec).max(1));
        self.seq += 1;
        let seq = self.seq;
        T::shelf(self).classes[class].push_back(Pooled { vec, resident, seq });
        self.bytes += resident;
        self.buffers += 1;
        while self.buffers > self.max_buffers || self.bytes > self.max_bytes {
            let Some(oldest) = self.evict_oldest() else { break };
            evicted.push(oldest);
        }
    }

    /// Take out the buffer that came back longest ago, of any type.
    fn evict_oldest(&mut self) -> Option<Evicted> {
        let shelves: [&mut dyn AnyShelf; 5] = [
            &mut self.u8s,
            &mut self.i32s,
            &mut self.i64s,
            &mut self.u128s,
            &mut self.f64s,
        ];
        let ((_, k), shelf) = shelves
            .into_iter()
            .filter_map(|shelf| shelf.oldest().map(|oldest| (oldest, shelf)))
            .min_by_key(|(oldest, _)| *oldest)?;
        let (resident, vec) = shelf.pop(k)?;
        self.bytes -= resident;
        self.buffers -= 1;
        Some(vec)
    }
}

/// The process's pool, under one lock: eviction compares ages across types.
static POOLS: Mutex<Pools> = Mutex::new(Pools::new(POOL_MAX_BYTES, POOL_MAX_BUFFERS));

fn bytes_of<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// An empty vector with room for `capacity` items: a pooled one when a large
/// enough one is free, else a fresh one.
pub fn take_vec<T: Poolable>(capacity: usize) -> Vec<T> {
    if capacity.saturating_mul(std::mem::size_of::<T>()) >= POOL_MIN_BYTES {
        if let Some(mut vec) = POOLS.lock().ok().and_then(|mut pools| pools.take(capacity)) {
            vec.clear();
            return vec;
        }
    }
    Vec::with_capacity(capacity)
}

/// Give `vec` to the pool (its contents no longer needed), if it is large
/// enough to be pooled; else free it.
pub fn recycle<T: Poolable>(mut vec: Vec<T>) {
    let resident = vec.len() * std::mem::size_of::<T>();
    if bytes_of(&vec) < POOL_MIN_BYTES || resident > POOL_MAX_BYTES {
        return;
    }
    let resident = release_spare(&mut vec);
    let mut evicted = Vec::new();
    if let Ok(mut pools) = POOLS.lock() {
        pools.put(vec, resident, &mut evicted);
    }
    drop(evicted);
}

/// Owns a vector while Arrow uses its bytes; gives it to the pool on drop.
struct Lent<T: Poolable>(Vec<T>);

impl<T: Poolable> Drop for Lent<T> {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.0));
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

/// A column's size per row, in 1/256ths: `n` items or bytes over `rows`
/// rows, learnt from one chunk to size the next (see [`learnt_room`]).
pub fn per_row(n: usize, rows: usize) -> usize {
    n.saturating_mul(256) / rows.max(1)
}

/// Room for `rows` rows of a column that ran `per_row` (see [`per_row`]) in
/// the last chunk: an eighth more, plus `slack`, and at most `most`. Sized
/// so, a column neither grows as it fills (each growth a copy into fresh
/// memory) nor asks the pool for much more than it will use.
pub fn learnt_room(per_row: usize, rows: usize, slack: usize, most: usize) -> usize {
    let n = per_row.saturating_mul(rows) / 256;
    n.saturating_add(n / 8).saturating_add(slack).min(most)
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
        let found = POOLS
            .lock()
            .map(|mut p| {
                u8::shelf(&mut p)
                    .classes
                    .iter()
                    .flatten()
                    .any(|e| e.vec.as_ptr() == ptr)
            })
            .unwrap_or(false);
        let reused = take_vec::<u8>(8 << 20);
        assert!(found || reused.capacity() >= 8 << 20);
        assert!(reused.is_empty());
        assert_eq!(into_buffer(b"small".to_vec()).as_slice(), b"small");
    }

    /// Puts `vec` in `pools`, counted at its capacity; what it evicted.
    fn put<T: Poolable>(pools: &mut Pools, vec: Vec<T>) -> Vec<Evicted> {
        let mut evicted = Vec::new();
        let resident = bytes_of(&vec);
        pools.put(vec, resident, &mut evicted);
        evicted
    }

    #[test]
    fn the_pool_evicts_what_came_back_longest_ago_whatever_its_type() {
        let mut pools = Pools::new(1000, 10);
        assert!(put(&mut pools, Vec::<u8>::with_capacity(600)).is_empty());
        assert!(put(&mut pools, Vec::<i64>::with_capacity(50)).is_empty());
        // 1,400 bytes: the u8 buffer is the oldest, not the other i64 one.
        let evicted = put(&mut pools, Vec::<i64>::with_capacity(50));
        let capacities: Vec<_> = evicted
            .iter()
            .map(|e| e.downcast_ref::<Vec<u8>>().map(Vec::capacity))
            .collect();
        assert_eq!(capacities, [Some(600)]);
        assert_eq!((pools.bytes, pools.buffers), (800, 2));
        assert!(pools.take::<u8>(600).is_none());
        assert!(pools.take::<i64>(50).is_some());
        assert!(pools.take::<i64>(50).is_some());
        assert!(pools.take::<i64>(1).is_none());
        assert_eq!((pools.bytes, pools.buffers), (0, 0));

        let mut pools = Pools::new(1 << 20, 2);
        for cap in [100, 200, 300] {
            let evicted = put(&mut pools, Vec::<i32>::with_capacity(cap));
            assert_eq!(evicted.len(), usize::from(cap == 300));
        }
        // Only the first (100) would serve 30.
        assert!(pools.take::<i32>(30).is_none(), "the oldest went first");
        assert_eq!(pools.take::<i32>(300).map(|v| v.capacity()), Some(300));
        assert_eq!(pools.take::<i32>(200).map(|v| v.capacity()), Some(200));
    }

    #[test]
    fn a_pooled_buffer_serves_requests_from_a_quarter_of_its_size_the_newest_first() {
        let mut pools = Pools::new(1 << 20, 10);
        put(&mut pools, Vec::<u8>::with_capacity(4096));
        assert!(pools.take::<u8>(4097).is_none());
        assert!(pools.take::<u8>(1023).is_none());
        assert_eq!(pools.take::<u8>(1024).map(|v| v.capacity()), Some(4096));

        let (older, newer) = (Vec::<f64>::with_capacity(600), Vec::<f64>::with_capacity(700));
        let newer_ptr = newer.as_ptr();
        put(&mut pools, older);
        put(&mut pools, newer);
        assert_eq!(pools.take::<f64>(550).map(|v| v.as_ptr()), Some(newer_ptr));
        assert_eq!(pools.take::<f64>(550).map(|v| v.capacity()), Some(600));
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
