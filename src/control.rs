//! Control records (spec "Control Batches"): the one record of a control
//! batch has key `version: int16, type: int16` (0 ABORT, 1 COMMIT; KRaft uses
//! others) and, for transaction markers, value `version: int16,
//! coordinatorEpoch: int32` (Kafka's `ControlRecordType` and
//! `EndTransactionMarker`).

use crate::batch::be_i32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlRecord {
    pub version: i16,
    pub type_id: i16,
    /// Only transaction markers (ABORT, COMMIT) carry one.
    pub coordinator_epoch: Option<i32>,
}

impl ControlRecord {
    /// "ABORT", "COMMIT", or the KRaft record names; "UNKNOWN" otherwise.
    pub fn type_name(&self) -> &'static str {
        match self.type_id {
            0 => "ABORT",
            1 => "COMMIT",
            2 => "LEADER_CHANGE",
            3 => "SNAPSHOT_HEADER",
            4 => "SNAPSHOT_FOOTER",
            5 => "KRAFT_VERSION",
            6 => "KRAFT_VOTERS",
            _ => "UNKNOWN",
        }
    }

    pub fn is_abort(&self) -> bool {
        self.type_id == 0
    }

    pub fn is_commit(&self) -> bool {
        self.type_id == 1
    }
}

/// Parse a control record's key and value; the error says why.
pub fn parse_control(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<ControlRecord, String> {
    let key = key.unwrap_or_default();
    if key.len() < 4 {
        return Err(format!(
            "control record key must have at least 4 bytes, found {}",
            key.len()
        ));
    }
    let version = i16::from_be_bytes([key[0], key[1]]);
    let type_id = i16::from_be_bytes([key[2], key[3]]);
    let mut record = ControlRecord {
        version,
        type_id,
        coordinator_epoch: None,
    };
    if record.is_abort() || record.is_commit() {
        let value = value.unwrap_or_default();
        if value.len() < 6 {
            return Err(format!(
                "end transaction marker value must have at least 6 bytes, found {}",
                value.len()
            ));
        }
        record.coordinator_epoch = Some(be_i32(value, 2));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_and_abort_markers() {
        let commit = parse_control(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 7])).expect("valid");
        assert_eq!((commit.type_name(), commit.coordinator_epoch), ("COMMIT", Some(7)));
        let abort = parse_control(Some(&[0, 0, 0, 0]), Some(&[0, 0, 0, 0, 1, 0])).expect("valid");
        assert_eq!((abort.type_name(), abort.coordinator_epoch), ("ABORT", Some(256)));
        let leader = parse_control(Some(&[0, 0, 0, 2]), Some(&[1])).expect("valid");
        assert_eq!((leader.type_name(), leader.coordinator_epoch), ("LEADER_CHANGE", None));
    }

    #[test]
    fn short_keys_and_values_are_errors() {
        assert!(parse_control(Some(&[0, 0, 0]), None).is_err());
        assert!(parse_control(None, None).is_err());
        assert!(parse_control(Some(&[0, 0, 0, 1]), Some(&[0, 0])).is_err());
    }
}
