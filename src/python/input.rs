//! Input buffers: anything with the buffer protocol, read without copying.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A held Python buffer (bytes, bytearray, memoryview, mmap, numpy uint8, ...).
pub struct Input {
    buffer: PyBuffer<u8>,
}

impl Input {
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buffer = PyBuffer::<u8>::get(obj).map_err(|_| {
            PyTypeError::new_err(format!(
                "data must support the buffer protocol with byte items (bytes, bytearray, memoryview, mmap, numpy uint8), not {}",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        if !buffer.is_c_contiguous() {
            return Err(PyTypeError::new_err("data must be a contiguous buffer"));
        }
        Ok(Input { buffer })
    }

    pub fn as_slice(&self) -> &[u8] {
        let len = self.buffer.len_bytes();
        if len == 0 {
            return &[];
        }
        // SAFETY: the buffer is C-contiguous with `len` bytes at `buf_ptr`, and
        // `self.buffer` keeps the exporter from releasing it while `self`
        // lives. As with every buffer consumer, a caller that mutates a
        // bytearray from another thread during decoding gets unspecified
        // (but memory-safe for reads of plain bytes) results.
        unsafe { std::slice::from_raw_parts(self.buffer.buf_ptr() as *const u8, len) }
    }
}
