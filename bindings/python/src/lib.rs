//! The Python extension `kafkabatch._kafkabatch`: a thin layer over the core.
//! Parsing and decompression run with the GIL released; Arrow data leaves
//! through the Arrow PyCapsule interface (`__arrow_c_stream__`,
//! `__arrow_c_schema__`), so no per-record Python objects are made on the
//! `decode()` path.

mod arrow;
mod batches;
mod encode;
mod errors;
mod generate;
mod input;
mod kmsg;
mod listing;
mod scan;
mod spark_options;
mod storage;
mod stream;
mod tasks;
mod tiered;
mod values;
mod walk;

use pyo3::prelude::*;

use kafkabatch::txn::AbortedTxn;

use kafkabatch::decode::{
    DecodeOptions, Isolation, OnError, DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_DECOMPRESSED_SIZE_LIMIT,
};

/// Parse the keyword options shared by `decode` and `iter_batches`.
pub(crate) fn options(
    validate_crc: bool,
    include_control: bool,
    on_error: &str,
    max_decompressed_size: usize,
    isolation: &str,
    aborted_transactions: Option<Vec<(i64, i64)>>,
    hide_open_transactions: Option<bool>,
) -> PyResult<(DecodeOptions, &'static str)> {
    let isolation = match isolation {
        "read_uncommitted" => {
            if aborted_transactions.is_some() {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "aborted_transactions needs isolation='read_committed'",
                ));
            }
            Isolation::ReadUncommitted
        }
        "read_committed" => Isolation::ReadCommitted {
            // By default open transactions are hidden unless a list (a Fetch
            // response's) is there to judge them.
            hide_open: hide_open_transactions.unwrap_or(aborted_transactions.is_none()),
            aborted: aborted_transactions.map(|list| {
                list.into_iter()
                    .map(|(producer_id, first_offset)| AbortedTxn {
                        producer_id,
                        first_offset,
                    })
                    .collect()
            }),
        },
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "isolation must be 'read_uncommitted' or 'read_committed', not {other:?}"
            )))
        }
    };
    let (on_error, mode) = match on_error {
        "raise" => (OnError::Raise, "raise"),
        "skip" => (OnError::Skip, "skip"),
        "keep" => (OnError::Skip, "keep"),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "on_error must be 'raise', 'skip' or 'keep', not {other:?}"
            )))
        }
    };
    if max_decompressed_size == 0 || max_decompressed_size > MAX_DECOMPRESSED_SIZE_LIMIT {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "max_decompressed_size must be between 1 and {MAX_DECOMPRESSED_SIZE_LIMIT} bytes, not {max_decompressed_size}"
        )));
    }
    Ok((
        DecodeOptions {
            validate_crc,
            include_control,
            on_error,
            max_decompressed_size,
            isolation,
            threads: 0,
        },
        mode,
    ))
}

#[pymodule]
fn _kafkabatch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_MAX_DECOMPRESSED_SIZE", DEFAULT_MAX_DECOMPRESSED_SIZE)?;
    errors::register(m)?;
    arrow::register(m)?;
    batches::register(m)?;
    encode::register(m)?;
    generate::register(m)?;
    values::register(m)?;
    tiered::register(m)?;
    kmsg::register(m)?;
    walk::register(m)?;
    listing::register(m)?;
    scan::register(m)?;
    spark_options::register(m)?;
    storage::register(m)?;
    stream::register(m)?;
    tasks::register(m)?;
    Ok(())
}
