//! Kafka's message definitions, and Kafka's own topics as tables.
//!
//! Kafka defines every structured payload it stores in JSON files
//! (`validVersions`, `flexibleVersions`, fields with version ranges,
//! nullable and tagged versions, defaults, common structs). This room holds
//! a loader of that format (`model`), the definitions the project ships
//! (`definitions/`, embedded by `builtin`, grouped by topic in `defs`), one
//! reader driven by them that writes Arrow columns (`read`, `columns`), an
//! encoder from the same definitions (`write`), and the framing of each
//! internal topic (`topics`): `__consumer_offsets`, `__transaction_state`,
//! `__share_group_state` (coordinator records), `__cluster_metadata` with
//! the KRaft control records, and `__remote_log_metadata`.
//!
//! A field that does not exist in a record's version is null. A tagged field
//! that the version has but the bytes omit takes its default, as Kafka's
//! reader gives it. Tagged fields the definitions don't know are kept raw in
//! each flexible struct's `_unknown_tagged_fields` (`tag`, `data`).

pub mod appended;
mod builtin;
pub mod columns;
pub mod defs;
mod json;
pub mod model;
pub mod read;
pub mod topics;
pub mod write;

#[cfg(test)]
mod tests;

pub use defs::{Definitions, Kind};
pub use read::ReadError;
pub use topics::TableDecoder;

use arrow_array::{Array, BinaryViewArray, GenericBinaryArray, OffsetSizeTrait, RecordBatch};

/// The keys or the values of a table's rows, row by row (`None`: null).
pub trait Payloads {
    /// The number of rows.
    fn rows(&self) -> usize;
    /// Row `i` (`i < rows()`).
    fn row(&self, i: usize) -> Option<&[u8]>;
}

impl Payloads for [Option<&[u8]>] {
    fn rows(&self) -> usize {
        self.len()
    }
    #[inline]
    fn row(&self, i: usize) -> Option<&[u8]> {
        self[i]
    }
}

impl Payloads for Vec<Option<&[u8]>> {
    fn rows(&self) -> usize {
        self.len()
    }
    #[inline]
    fn row(&self, i: usize) -> Option<&[u8]> {
        self[i]
    }
}

/// An Arrow `binary` or `large_binary` column, read in place.
impl<O: OffsetSizeTrait> Payloads for GenericBinaryArray<O> {
    fn rows(&self) -> usize {
        self.len()
    }
    #[inline]
    fn row(&self, i: usize) -> Option<&[u8]> {
        self.is_valid(i).then(|| self.value(i))
    }
}

/// An Arrow `binary_view` column, read in place.
impl Payloads for BinaryViewArray {
    fn rows(&self) -> usize {
        self.len()
    }
    #[inline]
    fn row(&self, i: usize) -> Option<&[u8]> {
        self.is_valid(i).then(|| self.value(i))
    }
}

/// `n` null rows.
pub struct NullRows(pub usize);

impl Payloads for NullRows {
    fn rows(&self) -> usize {
        self.0
    }
    fn row(&self, _: usize) -> Option<&[u8]> {
        None
    }
}

/// Decode the keys and values of one internal topic into a table (see
/// `TableDecoder` for its columns); the rows are the first
/// `min(keys, values)`. `control[i]` says whether row `i` is a control
/// record; a row that fails has its reason in `error`.
pub fn decode_internal<K: Payloads + ?Sized, V: Payloads + ?Sized>(
    defs: &Definitions,
    kind: Kind,
    keys: &K,
    values: &V,
    control: Option<&[bool]>,
    json: bool,
) -> RecordBatch {
    let mut dec = TableDecoder::new(defs, kind, json);
    dec.push_rows(keys, values, control);
    dec.finish()
}
