//! The Python exception hierarchy, rooted at `KafkaBatchError(ValueError)`.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kafkabatch::error::{DecodeError, ErrorKind};

create_exception!(
    kafkabatch,
    KafkaBatchError,
    PyValueError,
    "Root of every kafkabatch decoding error."
);
create_exception!(
    kafkabatch,
    CorruptBatchError,
    KafkaBatchError,
    "A batch's bytes contradict the Kafka format."
);
create_exception!(
    kafkabatch,
    CrcMismatchError,
    CorruptBatchError,
    "A batch's stored CRC does not match its bytes."
);
create_exception!(
    kafkabatch,
    DecompressionError,
    CorruptBatchError,
    "A compressed payload is invalid or inflates past the cap."
);
create_exception!(
    kafkabatch,
    UnsupportedFormatError,
    KafkaBatchError,
    "An unknown magic byte or compression codec."
);

/// The Python exception for a core error, with its location as attributes
/// (`batch_position`, `base_offset`, `byte_position`, `in_payload`, `reason`).
pub fn to_py(py: Python<'_>, e: &DecodeError) -> PyErr {
    let message = e.to_string();
    let err = match e.kind {
        ErrorKind::Corrupt => CorruptBatchError::new_err(message),
        ErrorKind::CrcMismatch => CrcMismatchError::new_err(message),
        ErrorKind::Decompression => DecompressionError::new_err(message),
        ErrorKind::Unsupported => UnsupportedFormatError::new_err(message),
    };
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in practice;
    // if it did, the message still carries the same facts.
    let _ = value.setattr("batch_position", e.batch_position);
    let _ = value.setattr("base_offset", e.base_offset);
    let _ = value.setattr("byte_position", e.byte_position);
    let _ = value.setattr("in_payload", e.in_payload);
    let _ = value.setattr("reason", e.reason.as_str());
    err
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KafkaBatchError", py.get_type::<KafkaBatchError>())?;
    m.add("CorruptBatchError", py.get_type::<CorruptBatchError>())?;
    m.add("CrcMismatchError", py.get_type::<CrcMismatchError>())?;
    m.add("DecompressionError", py.get_type::<DecompressionError>())?;
    m.add("UnsupportedFormatError", py.get_type::<UnsupportedFormatError>())?;
    Ok(())
}
