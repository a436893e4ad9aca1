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

use arrow_array::RecordBatch;

/// Decode the keys and values of one internal topic into a table (see
/// `TableDecoder` for its columns). `control[i]` says whether row `i` is a
/// control record; a row that fails has its reason in `error`.
pub fn decode_internal(
    defs: &Definitions,
    kind: Kind,
    keys: &[Option<&[u8]>],
    values: &[Option<&[u8]>],
    control: Option<&[bool]>,
    json: bool,
) -> RecordBatch {
    let mut dec = TableDecoder::new(defs, kind, json);
    dec.expect_rows(keys.len().min(values.len()));
    for (i, (k, v)) in keys.iter().zip(values).enumerate() {
        let is_control = control.and_then(|c| c.get(i)).copied().unwrap_or(false);
        dec.push(*k, *v, is_control);
    }
    dec.finish()
}
