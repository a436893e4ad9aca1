//! Input buffers: anything with the buffer protocol, read without copying.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A held Python buffer of bytes: bytes, bytearray, memoryview, mmap, numpy
/// uint8/int8, pyarrow buffers (Arrow exports binary data as signed `'b'`).
pub struct Input {
    buffer: Held,
}

enum Held {
    Unsigned(PyBuffer<u8>),
    Signed(PyBuffer<i8>),
}

impl Input {
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buffer = match PyBuffer::<u8>::get(obj) {
            Ok(b) => Held::Unsigned(b),
            Err(_) => Held::Signed(PyBuffer::<i8>::get(obj).map_err(|_| {
                PyTypeError::new_err(format!(
                    "data must support the buffer protocol with byte items (bytes, bytearray, memoryview, mmap, numpy uint8), not {}",
                    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })?),
        };
        let contiguous = match &buffer {
            Held::Unsigned(b) => b.is_c_contiguous(),
            Held::Signed(b) => b.is_c_contiguous(),
        };
        if !contiguous {
            return Err(PyTypeError::new_err("data must be a contiguous buffer"));
        }
        Ok(Input { buffer })
    }

    pub fn as_slice(&self) -> &[u8] {
        let (ptr, len) = match &self.buffer {
            Held::Unsigned(b) => (b.buf_ptr() as *const u8, b.len_bytes()),
            Held::Signed(b) => (b.buf_ptr() as *const u8, b.len_bytes()),
        };
        if len == 0 {
            return &[];
        }
        // SAFETY: the buffer is C-contiguous with `len` bytes at `ptr`, and
        // `self.buffer` keeps the exporter from releasing it while `self`
        // lives. As with every buffer consumer, a caller that mutates a
        // bytearray from another thread during decoding gets unspecified
        // (but memory-safe for reads of plain bytes) results.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

impl Input {
    /// The input as an Arrow buffer that keeps the Python buffer held (and
    /// so the object alive and, for a bytearray, unresizable) for as long
    /// as Arrow uses it: `binary_view` columns point into it.
    pub fn into_arrow_buffer(self) -> arrow_buffer::Buffer {
        let bytes = self.as_slice();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        let Some(ptr) = std::ptr::NonNull::new(ptr.cast_mut()) else {
            return arrow_buffer::Buffer::from_vec(Vec::<u8>::new());
        };
        if len == 0 {
            return arrow_buffer::Buffer::from_vec(Vec::<u8>::new());
        }
        let owner = std::sync::Arc::new(HeldInput {
            _input: std::panic::AssertUnwindSafe(self),
        });
        // SAFETY: `ptr` and `len` are those of `as_slice` (a contiguous
        // buffer the exporter keeps valid while it is held), and `owner`
        // holds it until Arrow drops the last user of the bytes; dropping a
        // PyBuffer takes the GIL itself, so any thread may drop it.
        unsafe { arrow_buffer::Buffer::from_custom_allocation(ptr, len, owner) }
    }
}

/// An [`Input`] owned by an Arrow buffer, released when it drops.
struct HeldInput {
    _input: std::panic::AssertUnwindSafe<Input>,
}
