//! Control batches (spec "Control Batches"): the transaction markers a
//! transaction coordinator writes. A v2 batch with the control and
//! transactional bits set, no compression, baseSequence -1, and one record:
//! key = version int16 (0) + type int16; value (Java's `EndTxnMarker`,
//! version 0) = version int16 (0) + coordinatorEpoch int32.

use super::v2;
use super::RecordRef;

/// The marker a control batch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlKind {
    /// Type 0: the producer's open transaction was aborted.
    Abort,
    /// Type 1: the producer's open transaction was committed.
    Commit,
}

impl ControlKind {
    /// The control record type id.
    pub fn id(self) -> i16 {
        match self {
            ControlKind::Abort => 0,
            ControlKind::Commit => 1,
        }
    }
}

/// Append a control batch (one commit or abort marker at `base_offset`) to
/// `out`. `timestamp` is both its base and max timestamp (CreateTime).
#[allow(clippy::too_many_arguments)] // the marker's fields, as Kafka names them
pub fn control_batch(
    kind: ControlKind,
    producer_id: i64,
    producer_epoch: i16,
    base_offset: i64,
    coordinator_epoch: i32,
    timestamp: i64,
    partition_leader_epoch: i32,
    out: &mut Vec<u8>,
) {
    let mut key = [0u8; 4];
    key[2..].copy_from_slice(&kind.id().to_be_bytes());
    let mut value = [0u8; 6];
    value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
    let record = RecordRef::new(Some(&key), Some(&value), timestamp);

    let start = out.len();
    out.extend_from_slice(&[0u8; v2::HEADER_SIZE]);
    v2::write_record(out, &record, 0, 0, 0);
    v2::patch_header(
        &mut out[start..],
        &v2::BatchHeader {
            base_offset,
            partition_leader_epoch,
            attributes: v2::CONTROL_BIT | v2::TRANSACTIONAL_BIT,
            last_offset_delta: 0,
            base_timestamp: timestamp,
            max_timestamp: timestamp,
            producer_id,
            producer_epoch,
            base_sequence: -1,
            record_count: 1,
        },
    );
}
