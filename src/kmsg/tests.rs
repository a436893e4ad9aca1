//! Tests of the definition-driven reader and encoder: every version of every
//! shipped record, cross-checked with the kafka-protocol crate where it has
//! the message, and hostile input.

use arrow_array::{
    Array, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int16Array, Int32Array, Int64Array,
    Int8Array, ListArray, RecordBatch, StringArray, StructArray, UInt16Array, UInt32Array,
};
use arrow_schema::DataType;
use base64::Engine;
use serde_json::{json, Map, Value};

use super::builtin::FILES;
use super::defs::{control_type, Definitions, Kind};
use super::model::{FieldType, MessageDef, Prim, Registry};
use super::topics::{record_types, TableDecoder};
use super::write::{coordinator_key, coordinator_value, encode_message, metadata_value};

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// A row of an Arrow array as JSON (bytes in base64), for comparisons.
pub(crate) fn row_json(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    let any = a.as_any();
    macro_rules! num {
        ($t:ty) => {
            if let Some(x) = any.downcast_ref::<$t>() {
                return json!(x.value(i));
            }
        };
    }
    num!(Int8Array);
    num!(Int16Array);
    num!(UInt16Array);
    num!(Int32Array);
    num!(UInt32Array);
    num!(Int64Array);
    num!(Float64Array);
    num!(BooleanArray);
    num!(StringArray);
    if let Some(x) = any.downcast_ref::<FixedSizeBinaryArray>() {
        return json!(super::read::uuid_text(x.value(i)));
    }
    if let Some(x) = any.downcast_ref::<BinaryArray>() {
        return json!(b64(x.value(i)));
    }
    if let Some(x) = any.downcast_ref::<ListArray>() {
        let v = x.value(i);
        return Value::Array((0..v.len()).map(|j| row_json(v.as_ref(), j)).collect());
    }
    if let Some(x) = any.downcast_ref::<StructArray>() {
        let mut m = Map::new();
        for (f, c) in x.fields().iter().zip(x.columns()) {
            m.insert(f.name().clone(), row_json(c.as_ref(), i));
        }
        return Value::Object(m);
    }
    panic!("unexpected type {}", a.data_type());
}

/// A sample value of every field of struct `id` in version `v`: distinct,
/// non-default values; nullable fields null when `seed` is odd.
fn sample(reg: &Registry, id: usize, v: i16, seed: i64) -> Value {
    let mut m = Map::new();
    for (k, f) in reg.structs[id].fields.iter().enumerate() {
        if !f.versions.contains(v) {
            continue;
        }
        let s = seed * 31 + k as i64 + 3;
        let nullable = f.nullable.contains(v);
        let val = if nullable && seed % 2 == 1 {
            Value::Null
        } else {
            sample_of(reg, &f.ty, v, s)
        };
        m.insert(super::columns::camel_case(&f.name), val);
    }
    Value::Object(m)
}

fn sample_of(reg: &Registry, ty: &FieldType, v: i16, s: i64) -> Value {
    match ty {
        FieldType::Prim(p) => match p {
            Prim::Bool => json!(true),
            Prim::Int8 => json!(s % 100 + 1),
            Prim::Int16 => json!(s % 30000 + 2),
            Prim::Uint16 => json!(s % 60000 + 40000),
            Prim::Int32 => json!(s * 1000 + 7),
            Prim::Uint32 => json!(3_000_000_000u32 + s as u32),
            Prim::Int64 => json!(s * 1_000_000_007 + 11),
            Prim::Float64 => json!(s as f64 + 0.25),
            Prim::String => json!(format!("s{s}-é")),
            Prim::Uuid => json!(super::read::uuid_text(&[s as u8 | 1; 16])),
            Prim::Bytes | Prim::Records => json!(b64(&[1, 2, 3, s as u8])),
        },
        FieldType::Struct(id) => sample(reg, *id, v, s % 2 * 2),
        FieldType::Array(inner) => Value::Array((0..2).map(|j| sample_of(reg, inner, v, s * 2 + j * 2)).collect()),
    }
}

/// Every key in `want` (recursively) has the same value in `got`.
fn assert_subset(want: &Value, got: &Value, path: &str) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let gv = g.get(k).unwrap_or_else(|| panic!("{path}.{k} missing in {got}"));
                assert_subset(wv, gv, &format!("{path}.{k}"));
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            assert_eq!(w.len(), g.len(), "{path}: lengths");
            for (j, (a, b)) in w.iter().zip(g).enumerate() {
                assert_subset(a, b, &format!("{path}[{j}]"));
            }
        }
        (Value::Number(a), Value::Number(b)) => assert_eq!(a.as_f64(), b.as_f64(), "{path}"),
        _ => assert_eq!(want, got, "{path}"),
    }
}

/// Fields absent in version `v` are null in the decoded row.
fn assert_absent_null(reg: &Registry, id: usize, v: i16, got: &Value, path: &str) {
    for f in &reg.structs[id].fields {
        let name = super::columns::camel_case(&f.name);
        let g = &got[&name];
        if !f.versions.contains(v) {
            assert!(g.is_null(), "{path}.{name} is not in version {v} but decoded as {g}");
        } else if let (Some(s), Value::Object(_)) = (super::model::struct_of(&f.ty), g) {
            assert_absent_null(reg, s, v, g, &format!("{path}.{name}"));
        }
    }
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> &'a dyn Array {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_ref()
}

#[test]
fn builtin_loads_every_file() {
    let mut reg = Registry::default();
    for (group, text) in FILES {
        reg.add_json(text).unwrap_or_else(|e| panic!("{group}: {e}"));
    }
    assert_eq!(reg.messages.len(), FILES.len());
    assert_eq!(Definitions::builtin().reg.messages.len(), FILES.len());
}

fn decode_one(defs: &Definitions, kind: Kind, key: Option<&[u8]>, value: Option<&[u8]>, control: bool) -> RecordBatch {
    let mut dec = TableDecoder::new(defs, kind, true);
    dec.push(key, value, control);
    dec.finish()
}

/// Every version of every key and value type of every topic: encoded from
/// the definitions, decoded, compared field for field, and re-encoded to
/// the same bytes from the decoded row.
#[test]
fn every_version_of_every_record_round_trips() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    let mut checked = 0;
    for kind in Kind::TOPICS {
        let types = record_types(&defs, kind);
        assert!(!types.is_empty(), "{kind:?}");
        for rt in &types {
            let value_msg = &reg.messages[rt.value];
            for vv in value_msg.valid.lo..=value_msg.valid.hi {
                for seed in [0i64, 1] {
                    let value = sample(reg, value_msg.root, vv, seed);
                    let (key_bytes, value_bytes, control, key_json) = if let Some(k) = rt.key {
                        let key_msg = &reg.messages[k];
                        let rtype = key_msg.valid.hi;
                        let key = sample(reg, key_msg.root, rtype, 0);
                        (
                            Some(coordinator_key(reg, key_msg, rtype, &key).unwrap()),
                            coordinator_value(reg, value_msg, vv, &value).unwrap(),
                            false,
                            Some((key_msg, rtype, key)),
                        )
                    } else if let Some(ct) = rt.control {
                        let mut key = vec![0, 0];
                        key.extend_from_slice(&ct.to_be_bytes());
                        let mut out = Vec::new();
                        encode_message(reg, value_msg, vv, &value, &mut out).unwrap();
                        (Some(key), out, true, None)
                    } else {
                        (None, metadata_value(reg, value_msg, vv, &value).unwrap(), false, None)
                    };
                    if rt.control.is_some() && vv != value_msg.valid.lo {
                        continue; // control records are written at one version
                    }
                    let batch = decode_one(&defs, kind, key_bytes.as_deref(), Some(&value_bytes), control);
                    let err = column(&batch, "error");
                    assert!(err.is_null(0), "{} v{vv}: {:?}", rt.name, row_json(err, 0));
                    assert_eq!(row_json(column(&batch, "record_type"), 0), json!(rt.name));
                    let got = row_json(column(&batch, &rt.column), 0);
                    let got_value = if rt.key.is_some() {
                        got["value"].clone()
                    } else {
                        got.clone()
                    };
                    assert_subset(&value, &got_value, &format!("{} v{vv}", rt.name));
                    assert_absent_null(reg, value_msg.root, vv, &got_value, &rt.name);
                    // Re-encoding the decoded row gives the same bytes.
                    let mut again = Vec::new();
                    encode_message(reg, value_msg, vv, &got_value, &mut again).unwrap();
                    let body_at = value_bytes.len() - again.len();
                    assert_eq!(&value_bytes[body_at..], &again[..], "{} v{vv} re-encoded", rt.name);
                    if let Some((key_msg, rtype, key)) = key_json {
                        assert_subset(&key, &got["key"], &format!("{}Key", rt.name));
                        assert_eq!(row_json(column(&batch, "record_type_id"), 0), json!(rtype));
                        let _ = key_msg;
                    }
                    assert!(!row_json(column(&batch, "json"), 0).is_null());
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked}");
}

/// Old offset commits (key version 0 and 1) and tombstones.
#[test]
fn offset_commit_key_versions_and_tombstones() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    let key_msg = reg.message("OffsetCommitKey").unwrap();
    let value_msg = reg.message("OffsetCommitValue").unwrap();
    for rtype in [0i16, 1] {
        let key = coordinator_key(
            reg,
            key_msg,
            rtype,
            &json!({"group": "g", "topic": "t", "partition": 7}),
        )
        .unwrap();
        let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), None, false);
        assert!(column(&batch, "error").is_null(0));
        assert_eq!(row_json(column(&batch, "tombstone"), 0), json!(true));
        let got = row_json(column(&batch, "offset_commit"), 0);
        assert_eq!(got["key"], json!({"group": "g", "topic": "t", "partition": 7}));
        assert!(got["value"].is_null());
        assert_eq!(row_json(column(&batch, "key_version"), 0), json!(rtype));
    }
    // v1 has expireTimestamp, v3 leaderEpoch; fields of other versions are null.
    let key = coordinator_key(reg, key_msg, 1, &json!({"group": "g", "topic": "t", "partition": 0})).unwrap();
    let v1 = coordinator_value(
        reg,
        value_msg,
        1,
        &json!({"offset": 5, "metadata": "m", "commitTimestamp": 9, "expireTimestamp": 10}),
    )
    .unwrap();
    // Hand-built: int16 version, int64 offset, string, int64, int64.
    let mut expect = vec![0, 1];
    expect.extend_from_slice(&5i64.to_be_bytes());
    expect.extend_from_slice(&[0, 1, b'm']);
    expect.extend_from_slice(&9i64.to_be_bytes());
    expect.extend_from_slice(&10i64.to_be_bytes());
    assert_eq!(v1, expect);
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&v1), false);
    let got = row_json(column(&batch, "offset_commit"), 0);
    assert_eq!(got["value"]["expireTimestamp"], json!(10));
    assert!(got["value"]["leaderEpoch"].is_null());
    assert_eq!(
        row_json(column(&batch, "json"), 0),
        json!(
            r#"{"key":{"type":"1","data":{"group":"g","topic":"t","partition":0}},"payload":{"version":"1","data":{"offset":5,"metadata":"m","commitTimestamp":9,"expireTimestamp":10}}}"#
        )
    );
}

/// Flexible versions: compact strings, tagged fields (known ones decoded,
/// absent ones defaulted, unknown ones kept raw).
#[test]
fn tagged_fields_known_default_and_unknown() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    let msg = reg.message("OffsetCommitValue").unwrap();
    // v4 (flexible), hand-built: offset, leaderEpoch, compact "ab", commitTimestamp,
    // then 2 tagged fields: unknown tags 5 and 9.
    let mut value = vec![0, 4];
    value.extend_from_slice(&42i64.to_be_bytes());
    value.extend_from_slice(&3i32.to_be_bytes());
    value.extend_from_slice(&[3, b'a', b'b']);
    value.extend_from_slice(&77i64.to_be_bytes());
    value.extend_from_slice(&[2, 5, 2, 0xde, 0xad, 9, 0]);
    let key = coordinator_key(
        reg,
        reg.message("OffsetCommitKey").unwrap(),
        1,
        &json!({"group": "g", "topic": "t", "partition": 1}),
    )
    .unwrap();
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&value), false);
    assert!(
        column(&batch, "error").is_null(0),
        "{:?}",
        row_json(column(&batch, "error"), 0)
    );
    let got = row_json(column(&batch, "offset_commit"), 0)["value"].clone();
    assert_eq!(got["offset"], json!(42));
    assert_eq!(got["metadata"], json!("ab"));
    assert_eq!(
        got["_unknown_tagged_fields"],
        json!([{"tag": 5, "data": b64(&[0xde, 0xad])}, {"tag": 9, "data": ""}])
    );
    // Re-encoding keeps the unknown tags.
    let mut again = Vec::new();
    encode_message(reg, msg, 4, &got, &mut again).unwrap();
    assert_eq!(again, value[2..]);

    // A known tagged field absent from the bytes takes its default.
    let group = reg.message("ConsumerGroupMemberMetadataValue").unwrap();
    let def = &reg.structs[group.root];
    let tagged: Vec<_> = def.fields.iter().filter(|f| f.tag.is_some()).collect();
    let mut obj = sample(reg, group.root, 0, 0);
    for f in &tagged {
        obj.as_object_mut()
            .unwrap()
            .remove(&super::columns::camel_case(&f.name));
    }
    let bytes = coordinator_value(reg, group, 0, &obj).unwrap();
    let key = coordinator_key(
        reg,
        reg.message("ConsumerGroupMemberMetadataKey").unwrap(),
        5,
        &json!({"groupId": "g", "memberId": "m"}),
    )
    .unwrap();
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&bytes), false);
    assert!(
        column(&batch, "error").is_null(0),
        "{:?}",
        row_json(column(&batch, "error"), 0)
    );
    let got = row_json(column(&batch, "consumer_group_member_metadata"), 0)["value"].clone();
    for f in &tagged {
        let name = super::columns::camel_case(&f.name);
        assert!(
            !got[&name].is_null() || f.default.as_deref() == Some("null"),
            "{name}: {got}"
        );
    }
}

/// A nullable struct sent as a tagged field carries an unsigned varint
/// presence marker inside the tagged field (Kafka's MessageDataGenerator:
/// size + 1, then 1; null is the marker 0).
#[test]
fn tagged_nullable_struct_marker() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    let msg = reg.message("ConsumerGroupMemberMetadataValue").unwrap();
    let mut value = vec![0, 0, 0, 0, 2, b'c', 2, b'h', 1, 0];
    value.extend_from_slice(&30_000i32.to_be_bytes());
    value.push(0); // ServerAssignor null
    let mut classic = vec![1]; // present
    classic.extend_from_slice(&45_000i32.to_be_bytes());
    classic.extend_from_slice(&[2, 2, b'r', 2, 9, 0, 0]);
    value.extend_from_slice(&[1, 0, classic.len() as u8]);
    value.extend_from_slice(&classic);
    let key = coordinator_key(
        reg,
        reg.message("ConsumerGroupMemberMetadataKey").unwrap(),
        5,
        &json!({"groupId": "g", "memberId": "m"}),
    )
    .unwrap();
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&value), false);
    assert!(
        column(&batch, "error").is_null(0),
        "{:?}",
        row_json(column(&batch, "error"), 0)
    );
    let got = row_json(column(&batch, "consumer_group_member_metadata"), 0)["value"].clone();
    assert_eq!(
        got["classicMemberMetadata"],
        json!({"sessionTimeoutMs": 45_000, "supportedProtocols": [{"name": "r", "metadata": b64(&[9]),
            "_unknown_tagged_fields": []}], "_unknown_tagged_fields": []})
    );
    let mut again = Vec::new();
    encode_message(reg, msg, 0, &got, &mut again).unwrap();
    assert_eq!(again, value[2..]);
    // An explicit null (marker 0) reads as null.
    let mut null_value = value[..value.len() - classic.len() - 3].to_vec();
    null_value.extend_from_slice(&[1, 0, 1, 0]);
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&null_value), false);
    assert!(
        column(&batch, "error").is_null(0),
        "{:?}",
        row_json(column(&batch, "error"), 0)
    );
    let got = row_json(column(&batch, "consumer_group_member_metadata"), 0)["value"].clone();
    assert!(got["classicMemberMetadata"].is_null());
}

fn metadata_record(defs: &Definitions, name: &str, version: i16, obj: &Value) -> Vec<u8> {
    let msg = defs.reg.message(name).unwrap();
    metadata_value(&defs.reg, msg, version, obj).unwrap()
}

#[test]
fn metadata_framing() {
    let defs = Definitions::builtin();
    let topic_id = super::read::uuid_text(&[7; 16]);
    let bytes = metadata_record(&defs, "TopicRecord", 0, &json!({"name": "orders", "topicId": topic_id}));
    // Hand-built: frame 1, api key 2, version 0, compact "orders", uuid, no tags.
    let mut expect = vec![1, 2, 0, 7];
    expect.extend_from_slice(b"orders");
    expect.extend_from_slice(&[7; 16]);
    expect.push(0);
    assert_eq!(bytes, expect);
    let batch = decode_one(&defs, Kind::ClusterMetadata, None, Some(&bytes), false);
    assert_eq!(row_json(column(&batch, "record_type"), 0), json!("TopicRecord"));
    assert_eq!(row_json(column(&batch, "topic_record"), 0)["topicId"], json!(topic_id));
    assert_eq!(
        row_json(column(&batch, "json"), 0),
        json!(format!(
            r#"{{"type":"TOPIC_RECORD","version":0,"data":{{"name":"orders","topicId":"{topic_id}"}}}}"#
        ))
    );
    // Garbage after the record, frame version 0, unknown api key, version out of range.
    let mut garbage = bytes.clone();
    garbage.push(0);
    for (bad, why) in [
        (garbage, "garbage"),
        (vec![0, 2, 0], "frame version 0"),
        (vec![1, 99, 0], "unknown record type 99"),
        (vec![1, 2, 9, 0], "version 9"),
    ] {
        let batch = decode_one(&defs, Kind::ClusterMetadata, None, Some(&bad), false);
        let err = row_json(column(&batch, "error"), 0);
        assert!(err.as_str().unwrap().contains(why), "{err}");
        assert!(column(&batch, "topic_record").is_null(0));
    }
}

/// Every prefix of every sample record fails with a per-row error (never a
/// panic), and the rows around it still decode.
#[test]
fn truncations_are_row_errors() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    for kind in Kind::TOPICS {
        for rt in record_types(&defs, kind) {
            let msg = &reg.messages[rt.value];
            let v = msg.valid.hi;
            let obj = sample(reg, msg.root, v, 0);
            let (key, value) = match rt.key {
                Some(k) => {
                    let km = &reg.messages[k];
                    (
                        Some(coordinator_key(reg, km, km.valid.hi, &sample(reg, km.root, km.valid.hi, 0)).unwrap()),
                        coordinator_value(reg, msg, v, &obj).unwrap(),
                    )
                }
                None if rt.control.is_some() => continue,
                None => (None, metadata_value(reg, msg, v, &obj).unwrap()),
            };
            let mut dec = TableDecoder::new(&defs, kind, true);
            for cut in 0..value.len() {
                dec.push(key.as_deref(), Some(&value), false);
                dec.push(key.as_deref(), Some(&value[..cut]), false);
            }
            let batch = dec.finish();
            let err = column(&batch, "error");
            for row in 0..batch.num_rows() {
                assert_eq!(
                    err.is_null(row),
                    row % 2 == 0,
                    "{} row {row}: {:?}",
                    rt.name,
                    row_json(err, row)
                );
                assert_eq!(column(&batch, &rt.column).is_null(row), row % 2 == 1);
            }
            assert_eq!(
                row_json(column(&batch, &rt.column), 0),
                row_json(column(&batch, &rt.column), 2)
            );
        }
    }
}

#[test]
fn hostile_counts_versions_and_definitions() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    let key = coordinator_key(reg, reg.message("GroupMetadataKey").unwrap(), 2, &json!({"group": "g"})).unwrap();
    // GroupMetadataValue v0 with a member count of 2^31-1.
    let mut value = vec![0, 0, 0, 8];
    value.extend_from_slice(b"consumer");
    value.extend_from_slice(&1i32.to_be_bytes());
    value.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // protocol null, leader null
    value.extend_from_slice(&i32::MAX.to_be_bytes());
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&value), false);
    let err = row_json(column(&batch, "error"), 0);
    assert!(err.as_str().unwrap().contains("elements claimed"), "{err}");
    // Versions out of range; an unknown record type; no key.
    for (k, v, why) in [
        (key.clone(), vec![0, 9], "version 9"),
        (vec![0, 99], vec![0, 0], "unknown record type 99"),
        (vec![0], vec![0, 0], "record type"),
    ] {
        let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&k), Some(&v), false);
        let err = row_json(column(&batch, "error"), 0);
        assert!(err.as_str().unwrap().contains(why), "{why}: {err}");
    }
    let batch = decode_one(&defs, Kind::ConsumerOffsets, None, Some(&[0, 0]), false);
    assert!(!column(&batch, "error").is_null(0));
    // A definition that nests itself, or nests too deep, is refused.
    let mut r = Registry::default();
    let cyclic = r#"{"name": "A", "validVersions": "0", "flexibleVersions": "none", "fields": [
        {"name": "x", "type": "[]Node", "versions": "0+"}],
        "commonStructs": [{"name": "Node", "versions": "0+", "fields": [
            {"name": "next", "type": "[]Node", "versions": "0+"}]}]}"#;
    assert!(r.add_json(cyclic).unwrap_err().contains("nest"));
    let mut deep = String::from(r#"{"name": "D", "validVersions": "0", "fields": ["#);
    for i in 0..40 {
        deep.push_str(&format!(
            r#"{{"name": "f{i}", "type": "S{i}", "versions": "0+", "fields": ["#
        ));
    }
    deep.push_str(&"]}".repeat(40));
    deep.push_str("]}");
    assert!(r.add_json(&deep).unwrap_err().contains("nest"));
    assert!(r.add_json("{").is_err());
    assert!(r
        .add_json(r#"{"name": "X", "validVersions": "0", "fields": [{"name": "a", "type": "Nope", "versions": "0+"}]}"#)
        .is_err());
}

/// User definitions: Kafka's own file format with comments, replacing a
/// shipped message by name.
#[test]
fn user_definitions_replace_builtins() {
    let dir = std::env::temp_dir().join(format!("kmsg-defs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = r#"// Licensed to the Apache Software Foundation (ASF)
    // a comment with "quotes" and // slashes
    {
      "type": "data", "name": "OffsetCommitValue", "validVersions": "0-5", "flexibleVersions": "4+",
      "fields": [
        { "name": "offset", "type": "int64", "versions": "0+" },
        { "name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1, "ignorable": true},
        { "name": "metadata", "type": "string", "versions": "0+", "about": "http://example.com // not a comment" },
        { "name": "commitTimestamp", "type": "int64", "versions": "0+" },
        { "name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1, "ignorable": true},
        { "name": "topicId", "type": "uuid", "versions": "5+", "taggedVersions": "5+", "tag": 0 }
      ]
    }"#;
    std::fs::write(dir.join("OffsetCommitValue.json"), text).unwrap();
    let defs = Definitions::with_dir(&dir).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let reg = &defs.reg;
    let id = super::read::uuid_text(&[9; 16]);
    let value = coordinator_value(
        reg,
        reg.message("OffsetCommitValue").unwrap(),
        5,
        &json!({"offset": 1, "metadata": "", "commitTimestamp": 2, "topicId": id}),
    )
    .unwrap();
    let key = coordinator_key(
        reg,
        reg.message("OffsetCommitKey").unwrap(),
        1,
        &json!({"group": "g", "topic": "t", "partition": 0}),
    )
    .unwrap();
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&key), Some(&value), false);
    assert!(column(&batch, "error").is_null(0));
    assert_eq!(
        row_json(column(&batch, "offset_commit"), 0)["value"]["topicId"],
        json!(id)
    );
    // The shipped definitions don't know tag 0 in v4: kept raw there.
    let builtin = Definitions::builtin();
    let mut v4 = value.clone();
    v4[1] = 4;
    let batch = decode_one(&builtin, Kind::ConsumerOffsets, Some(&key), Some(&v4), false);
    let got = row_json(column(&batch, "offset_commit"), 0)["value"].clone();
    assert_eq!(got["_unknown_tagged_fields"][0]["tag"], json!(0));
}

// ---- cross-checks with the kafka-protocol crate ----

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::{ConsumerProtocolAssignment, TopicPartition as AsgTp};
use kafka_protocol::messages::consumer_protocol_subscription::{ConsumerProtocolSubscription, TopicPartition};
use kafka_protocol::messages::k_raft_version_record::KRaftVersionRecord;
use kafka_protocol::messages::leader_change_message::{LeaderChangeMessage, Voter as LcVoter};
use kafka_protocol::messages::snapshot_footer_record::SnapshotFooterRecord;
use kafka_protocol::messages::snapshot_header_record::SnapshotHeaderRecord;
use kafka_protocol::messages::voters_record::{Endpoint, KRaftVersionFeature, Voter, VotersRecord};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

fn kp_bytes<T: Encodable>(m: &T, v: i16) -> Vec<u8> {
    let mut buf = BytesMut::new();
    m.encode(&mut buf, v).unwrap();
    buf.to_vec()
}

/// kafka-protocol's bytes decode with our reader to the fields it set, our
/// encoder writes those very bytes back from the decoded row, and
/// kafka-protocol reads our encoder's bytes back to the same message.
fn cross_check<T: Encodable + Decodable + PartialEq + std::fmt::Debug>(
    defs: &Definitions,
    name: &str,
    m: &T,
    v: i16,
    expect: &Value,
) {
    let msg: &MessageDef = defs.reg.message(name).unwrap();
    let theirs = kp_bytes(m, v);
    let mut dec = TableDecoder::new(defs, Kind::ClusterMetadata, false);
    let got = match control_type(name) {
        Some((ct, _)) => {
            let mut key = vec![0, 0];
            key.extend_from_slice(&ct.to_be_bytes());
            dec.push(Some(&key), Some(&theirs), true);
            let batch = dec.finish();
            assert!(
                column(&batch, "error").is_null(0),
                "{:?}",
                row_json(column(&batch, "error"), 0)
            );
            let col = super::topics::snake_case(control_type(name).unwrap().1);
            row_json(column(&batch, &col), 0)
        }
        None => {
            let mut col = super::columns::StructCol::new(&defs.reg, msg.root, !msg.flexible.is_empty());
            super::read::read_message(&defs.reg, msg, v, &theirs, &mut col).unwrap();
            row_json(&col.finish(), 0)
        }
    };
    assert_subset(expect, &got, name);
    let mut ours = Vec::new();
    encode_message(&defs.reg, msg, v, &got, &mut ours).unwrap();
    assert_eq!(ours, theirs, "{name} v{v}: our encoding differs");
    let back = T::decode(&mut Bytes::from(ours), v).unwrap();
    assert_eq!(&back, m);
}

#[test]
fn kraft_control_records_match_kafka_protocol() {
    let defs = Definitions::builtin();
    let mut voter = LcVoter::default().with_voter_id(3);
    voter.voter_directory_id = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    let dir_id = super::read::uuid_text(voter.voter_directory_id.as_bytes());
    for v in 0..=1 {
        let mut lc = LeaderChangeMessage::default()
            .with_version(v)
            .with_leader_id(kafka_protocol::messages::BrokerId(3))
            .with_voters(vec![voter.clone(), LcVoter::default().with_voter_id(4)])
            .with_granting_voters(vec![voter.clone()]);
        if v == 0 {
            lc.voters[0].voter_directory_id = Default::default();
            lc.granting_voters[0].voter_directory_id = Default::default();
        }
        lc.unknown_tagged_fields.insert(7, Bytes::from_static(b"xy"));
        let mut expect = json!({"version": v, "leaderId": 3, "voters": [{"voterId": 3}, {"voterId": 4}],
            "_unknown_tagged_fields": [{"tag": 7, "data": b64(b"xy")}]});
        if v == 1 {
            expect["voters"][0]["voterDirectoryId"] = json!(dir_id);
        }
        // LeaderChange is written at version 0 in control batches; other
        // versions are read directly.
        if v == 0 {
            cross_check(&defs, "LeaderChangeMessage", &lc, v, &expect);
        } else {
            let msg = defs.reg.message("LeaderChangeMessage").unwrap();
            let theirs = kp_bytes(&lc, v);
            let mut col = super::columns::StructCol::new(&defs.reg, msg.root, true);
            super::read::read_message(&defs.reg, msg, v, &theirs, &mut col).unwrap();
            let got = row_json(&col.finish(), 0);
            assert_subset(&expect, &got, "LeaderChangeMessage v1");
            let mut ours = Vec::new();
            encode_message(&defs.reg, msg, v, &got, &mut ours).unwrap();
            assert_eq!(ours, theirs);
        }
    }
    let header = SnapshotHeaderRecord::default()
        .with_version(0)
        .with_last_contained_log_timestamp(1_700_000_000_123);
    cross_check(
        &defs,
        "SnapshotHeaderRecord",
        &header,
        0,
        &json!({"version": 0, "lastContainedLogTimestamp": 1_700_000_000_123i64}),
    );
    let footer = SnapshotFooterRecord::default().with_version(0);
    cross_check(&defs, "SnapshotFooterRecord", &footer, 0, &json!({"version": 0}));
    let kv = KRaftVersionRecord::default().with_version(0).with_k_raft_version(1);
    cross_check(
        &defs,
        "KRaftVersionRecord",
        &kv,
        0,
        &json!({"version": 0, "kRaftVersion": 1}),
    );
    let mut v1 = Voter::default()
        .with_voter_id(kafka_protocol::messages::BrokerId(1))
        .with_endpoints(vec![Endpoint::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("c1.example"))
            .with_port(9093)])
        .with_k_raft_version_feature(
            KRaftVersionFeature::default()
                .with_min_supported_version(0)
                .with_max_supported_version(1),
        );
    v1.voter_directory_id = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    let voters = VotersRecord::default().with_version(0).with_voters(vec![v1]);
    cross_check(
        &defs,
        "VotersRecord",
        &voters,
        0,
        &json!({"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": dir_id,
            "endpoints": [{"name": "CONTROLLER", "host": "c1.example", "port": 9093}],
            "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}),
    );
}

#[test]
fn consumer_protocol_matches_kafka_protocol() {
    let defs = Definitions::builtin();
    for v in 0..=3 {
        let mut sub = ConsumerProtocolSubscription::default()
            .with_topics(vec![
                StrBytes::from_static_str("orders"),
                StrBytes::from_static_str("pay"),
            ])
            .with_user_data(Some(Bytes::from_static(b"ud")));
        let mut expect = json!({"topics": ["orders", "pay"], "userData": b64(b"ud")});
        if v >= 1 {
            sub.owned_partitions = vec![TopicPartition::default()
                .with_topic(StrBytes::from_static_str("orders").into())
                .with_partitions(vec![0, 2])];
            expect["ownedPartitions"] = json!([{"topic": "orders", "partitions": [0, 2]}]);
        }
        if v >= 2 {
            sub.generation_id = 12;
            expect["generationId"] = json!(12);
        }
        if v >= 3 {
            sub.rack_id = Some(StrBytes::from_static_str("rack-a"));
            expect["rackId"] = json!("rack-a");
        }
        cross_check(&defs, "ConsumerProtocolSubscription", &sub, v, &expect);
        let asg = ConsumerProtocolAssignment::default()
            .with_assigned_partitions(vec![AsgTp::default()
                .with_topic(StrBytes::from_static_str("pay").into())
                .with_partitions(vec![1])])
            .with_user_data(None);
        cross_check(
            &defs,
            "ConsumerProtocolAssignment",
            &asg,
            v,
            &json!({"assignedPartitions": [{"topic": "pay", "partitions": [1]}], "userData": null}),
        );
    }
}

/// GroupMetadataValue members of a "consumer" group: their subscription and
/// assignment bytes (kafka-protocol's, with the int16 version in front) decoded.
#[test]
fn group_metadata_members_consumer_protocol() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    let sub = ConsumerProtocolSubscription::default()
        .with_topics(vec![StrBytes::from_static_str("orders")])
        .with_generation_id(4);
    let mut sub_bytes = 3i16.to_be_bytes().to_vec();
    sub_bytes.extend(kp_bytes(&sub, 3));
    let asg = ConsumerProtocolAssignment::default().with_assigned_partitions(vec![AsgTp::default()
        .with_topic(StrBytes::from_static_str("orders").into())
        .with_partitions(vec![0, 1])]);
    // A newer version than known is read as the newest known one.
    let mut asg_bytes = 7i16.to_be_bytes().to_vec();
    asg_bytes.extend(kp_bytes(&asg, 3));
    let member = |protocol_type: &str| {
        json!({"protocolType": protocol_type, "generation": 4, "protocol": "range", "leader": "m1",
            "currentStateTimestamp": 5, "members": [{"memberId": "m1", "groupInstanceId": null, "clientId": "c",
            "clientHost": "/10.0.0.1", "rebalanceTimeout": 300, "sessionTimeout": 45,
            "subscription": b64(&sub_bytes), "assignment": b64(&asg_bytes)}]})
    };
    let key = coordinator_key(reg, reg.message("GroupMetadataKey").unwrap(), 2, &json!({"group": "g"})).unwrap();
    let value_msg = reg.message("GroupMetadataValue").unwrap();
    for v in 0..=4 {
        let mut dec = TableDecoder::new(&defs, Kind::ConsumerOffsets, true);
        for pt in ["consumer", "connect"] {
            dec.push(
                Some(&key),
                Some(&coordinator_value(reg, value_msg, v, &member(pt)).unwrap()),
                false,
            );
        }
        let batch = dec.finish();
        assert!(
            column(&batch, "error").is_null(0),
            "{:?}",
            row_json(column(&batch, "error"), 0)
        );
        let got = row_json(column(&batch, "group_metadata"), 0);
        let m = &got["value"]["members"][0];
        assert_eq!(m["consumerProtocolSubscription"]["topics"], json!(["orders"]));
        assert_eq!(m["consumerProtocolSubscription"]["generationId"], json!(4));
        assert_eq!(
            m["consumerProtocolAssignment"]["assignedPartitions"],
            json!([{"topic": "orders", "partitions": [0, 1]}])
        );
        let other = row_json(column(&batch, "group_metadata"), 1);
        assert!(other["value"]["members"][0]["consumerProtocolSubscription"].is_null());
        let text = row_json(column(&batch, "json"), 0);
        assert!(
            text.as_str()
                .unwrap()
                .contains(r#""subscription":{"topics":["orders"]"#),
            "{text}"
        );
        // A "consumer" member whose bytes are not the consumer protocol: the
        // decoded fields are null, the bytes kept, the row no error.
        let mut junk = member("consumer");
        junk["members"][0]["subscription"] = json!(b64(&[0, 0, 0, 0, 0, 9]));
        let mut dec = TableDecoder::new(&defs, Kind::ConsumerOffsets, true);
        dec.push(
            Some(&key),
            Some(&coordinator_value(reg, value_msg, v, &junk).unwrap()),
            false,
        );
        let junk_batch = dec.finish();
        assert!(
            column(&junk_batch, "error").is_null(0),
            "{:?}",
            row_json(column(&junk_batch, "error"), 0)
        );
        let m = &row_json(column(&junk_batch, "group_metadata"), 0)["value"]["members"][0];
        assert!(m["consumerProtocolSubscription"].is_null());
        assert_eq!(m["subscription"], json!(b64(&[0, 0, 0, 0, 0, 9])));
        assert_eq!(
            m["consumerProtocolAssignment"]["assignedPartitions"][0]["topic"],
            json!("orders")
        );
        let text = row_json(column(&junk_batch, "json"), 0);
        assert!(
            text.as_str().unwrap().contains(r#""subscription":"AAAAAAAJ""#),
            "{text}"
        );
    }
}

#[test]
fn record_type_columns_are_snake_case() {
    let defs = Definitions::builtin();
    let names: Vec<String> = record_types(&defs, Kind::ClusterMetadata)
        .into_iter()
        .map(|t| t.column)
        .collect();
    for want in [
        "topic_record",
        "partition_change_record",
        "leader_change",
        "kraft_version",
        "voters",
        "snapshot_header",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    let co: Vec<String> = record_types(&defs, Kind::ConsumerOffsets)
        .into_iter()
        .map(|t| t.column)
        .collect();
    assert!(
        co.contains(&"offset_commit".to_string())
            && co.contains(&"consumer_group_target_assignment_member".to_string())
    );
    let schema = TableDecoder::new(&defs, Kind::TransactionState, true).schema();
    assert!(matches!(
        schema.field_with_name("transaction_log").unwrap().data_type(),
        DataType::Struct(_)
    ));
}

/// Kafka 4's definition files name a coordinator record's type with
/// `"type": "coordinator-key"` and `"apiKey"` (the key read at its own
/// version 0) instead of the key's valid versions.
#[test]
fn coordinator_key_files_with_api_keys() {
    let dir = std::env::temp_dir().join(format!("kmsg-ck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = r#"{ "apiKey": 0, "type": "coordinator-key", "name": "LegacyOffsetCommitKey",
      "validVersions": "0", "flexibleVersions": "none",
      "fields": [ { "name": "group", "type": "string", "versions": "0" },
                  { "name": "topic", "type": "string", "versions": "0" },
                  { "name": "partition", "type": "int32", "versions": "0" } ] }"#;
    let value = r#"{ "apiKey": 0, "type": "coordinator-value", "name": "LegacyOffsetCommitValue",
      "validVersions": "0", "flexibleVersions": "none",
      "fields": [ { "name": "offset", "type": "int64", "versions": "0" },
                  { "name": "metadata", "type": "string", "versions": "0" },
                  { "name": "commitTimestamp", "type": "int64", "versions": "0" } ] }"#;
    std::fs::write(dir.join("LegacyOffsetCommitKey.json"), key).unwrap();
    std::fs::write(dir.join("LegacyOffsetCommitValue.json"), value).unwrap();
    let defs = Definitions::with_dir(&dir).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let reg = &defs.reg;
    let k = coordinator_key(
        reg,
        reg.message("LegacyOffsetCommitKey").unwrap(),
        0,
        &json!({"group": "g", "topic": "t", "partition": 2}),
    )
    .unwrap();
    assert_eq!(&k[..4], &[0, 0, 0, 1]); // type 0, then the group "g"
    let v = coordinator_value(
        reg,
        reg.message("LegacyOffsetCommitValue").unwrap(),
        0,
        &json!({"offset": 9, "metadata": "", "commitTimestamp": 1}),
    )
    .unwrap();
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&k), Some(&v), false);
    assert!(
        column(&batch, "error").is_null(0),
        "{:?}",
        row_json(column(&batch, "error"), 0)
    );
    assert_eq!(row_json(column(&batch, "record_type"), 0), json!("LegacyOffsetCommit"));
    let got = row_json(column(&batch, "legacy_offset_commit"), 0);
    assert_eq!(got["key"]["partition"], json!(2));
    assert_eq!(got["value"]["offset"], json!(9));
    // Type 1 still reads as the shipped OffsetCommit.
    let k1 = coordinator_key(
        reg,
        reg.message("OffsetCommitKey").unwrap(),
        1,
        &json!({"group": "g", "topic": "t", "partition": 2}),
    )
    .unwrap();
    let batch = decode_one(&defs, Kind::ConsumerOffsets, Some(&k1), None, false);
    assert_eq!(row_json(column(&batch, "record_type"), 0), json!("OffsetCommit"));
}

/// The rows of every kind's records at every version, mixed in one table
/// (runs of one version, versions alternating, tombstones, cut values,
/// control markers), each equal to that row decoded alone: a struct read
/// in bulk (rows read by flat plans, fields their version lacks padded
/// late, the fixed columns written run by run) holds what it holds when
/// read row by row by the general path.
#[test]
fn mixed_rows_decode_as_each_row_alone() {
    let defs = Definitions::builtin();
    let reg = &defs.reg;
    type Row = (Option<Vec<u8>>, Option<Vec<u8>>, bool);
    for kind in Kind::TOPICS {
        let mut rows: Vec<Row> = Vec::new();
        for rt in record_types(&defs, kind) {
            let msg = &reg.messages[rt.value];
            for v in msg.valid.lo..=msg.valid.hi {
                let obj = sample(reg, msg.root, v, i64::from(v));
                match (rt.key, rt.control) {
                    (Some(k), _) => {
                        let km = &reg.messages[k];
                        let kv = km.valid.hi;
                        let key = coordinator_key(reg, km, kv, &sample(reg, km.root, kv, 0)).unwrap();
                        let value = coordinator_value(reg, msg, v, &obj).unwrap();
                        rows.push((Some(key.clone()), Some(value[..value.len() / 2].to_vec()), false));
                        rows.push((Some(key.clone()), None, false));
                        rows.push((Some(key), Some(value), false));
                    }
                    (None, Some(ct)) if v == msg.valid.lo => {
                        let mut key = vec![0, 0];
                        key.extend_from_slice(&ct.to_be_bytes());
                        let mut out = Vec::new();
                        encode_message(reg, msg, v, &obj, &mut out).unwrap();
                        rows.push((Some(key), Some(out), true));
                    }
                    (None, Some(_)) => {}
                    (None, None) => {
                        let value = metadata_value(reg, msg, v, &obj).unwrap();
                        rows.push((None, Some(value[..value.len() - 1].to_vec()), false));
                        rows.push((None, Some(value), false));
                    }
                }
            }
        }
        rows.push((Some(vec![0, 0, 0, 1]), Some(vec![0, 0, 0, 0, 0, 0]), true));
        // Each row once, then runs of three, then every other row (versions alternating).
        let n = rows.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.extend((0..n).flat_map(|i| [i, i, i]));
        order.extend((0..n).step_by(2).chain((1..n).step_by(2)));
        // A row that is not accepted among rows of its type and versions
        // (a coordinator record's cut value between whole ones).
        order.extend(
            (0..n.saturating_sub(2))
                .step_by(3)
                .flat_map(|i| [i + 2, i + 2, i, i + 2]),
        );
        // Row by row, with JSON, and all rows at once (`push_rows`: runs
        // read in blocks, field by field).
        for (with_json, at_once) in [(false, false), (true, false), (false, true)] {
            let mut dec = TableDecoder::new(&defs, kind, with_json);
            if at_once {
                let keys: Vec<Option<&[u8]>> = order.iter().map(|&i| rows[i].0.as_deref()).collect();
                let values: Vec<Option<&[u8]>> = order.iter().map(|&i| rows[i].1.as_deref()).collect();
                let control: Vec<bool> = order.iter().map(|&i| rows[i].2).collect();
                dec.push_rows(&keys, &values, Some(&control));
            } else {
                for &i in &order {
                    let (k, v, c) = &rows[i];
                    dec.push(k.as_deref(), v.as_deref(), *c);
                }
            }
            let batch = dec.finish();
            assert_eq!(batch.num_rows(), order.len());
            for (row, &i) in order.iter().enumerate() {
                let (k, v, c) = &rows[i];
                // Alone and with JSON: always the general path, never `push_flat`.
                let mut one = TableDecoder::new(&defs, kind, true);
                one.push(k.as_deref(), v.as_deref(), *c);
                let alone = one.finish();
                for (f, col) in batch.schema().fields().iter().zip(batch.columns()) {
                    assert_eq!(
                        row_json(col.as_ref(), row),
                        row_json(column(&alone, f.name()), 0),
                        "{kind:?} row {row} (record {i}) column {}",
                        f.name()
                    );
                }
            }
        }
    }
}

/// Strings are text as Java decodes them: invalid UTF-8 becomes
/// replacement characters, value by value (a character cut between two
/// values is invalid in both), valid non-ASCII text stays.
#[test]
fn invalid_utf8_strings_become_replacement_characters() {
    let defs = Definitions::builtin();
    let groups: [&[u8]; 4] = [b"plain", "caf\u{e9}".as_bytes(), b"bad\xff\xfe", b"cut\xc3"];
    let topics: [&[u8]; 4] = [b"t", b"\xa9x", b"ok", b"\xe2\x82"];
    let mut dec = TableDecoder::new(&defs, Kind::ConsumerOffsets, true);
    let mut expected = Vec::new();
    for (g, t) in groups.iter().zip(topics) {
        // OffsetCommitKey v1: int16 type, int16-length group and topic, int32 partition.
        let mut key = vec![0, 1];
        for s in [*g, t] {
            key.extend_from_slice(&(s.len() as i16).to_be_bytes());
            key.extend_from_slice(s);
        }
        key.extend_from_slice(&3i32.to_be_bytes());
        dec.push(Some(&key), None, false);
        expected.push(json!({
            "group": String::from_utf8_lossy(g),
            "topic": String::from_utf8_lossy(t),
            "partition": 3,
        }));
    }
    let batch = dec.finish();
    for (row, want) in expected.iter().enumerate() {
        assert!(column(&batch, "error").is_null(row));
        assert_eq!(
            &row_json(column(&batch, "offset_commit"), row)["key"],
            want,
            "row {row}"
        );
        let text = row_json(column(&batch, "json"), row);
        let parsed: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
        assert_eq!(&parsed["key"]["data"], want, "row {row} json");
    }
}

/// Strings of every length from 0 to 40, read in blocks (field by field,
/// short values moved 16 bytes at a time), at the start of a row (the group,
/// more bytes after it) and near its end (the topic, only the 4-byte
/// partition after it) are the bytes written; a cut row among them is an
/// error of its own and leaves the others whole.
#[test]
fn block_strings_of_every_length() {
    let defs = Definitions::builtin();
    let text = |n: usize, seed: usize| -> Vec<u8> { (0..n).map(|i| b'a' + ((i * 7 + seed) % 26) as u8).collect() };
    let mut keys = Vec::new();
    let mut expected = Vec::new();
    for n in 0..=40usize {
        for m in [0, 1, 15, 16, 17, 31, 32, 33, 40] {
            let (g, t) = (text(n, m), text(m, n));
            // OffsetCommitKey v1: int16 type, int16-length group and topic, int32 partition.
            let mut key = vec![0, 1];
            for s in [&g, &t] {
                key.extend_from_slice(&(s.len() as i16).to_be_bytes());
                key.extend_from_slice(s);
            }
            key.extend_from_slice(&((n * 100 + m) as i32).to_be_bytes());
            keys.push(key);
            expected.push(json!({
                "group": String::from_utf8(g).unwrap(),
                "topic": String::from_utf8(t).unwrap(),
                "partition": n * 100 + m,
            }));
        }
    }
    // OffsetCommitValue v1: offset, metadata, commit and expire timestamps.
    let mut value = vec![0, 1];
    value.extend_from_slice(&5i64.to_be_bytes());
    value.extend_from_slice(&3i16.to_be_bytes());
    value.extend_from_slice(b"abc");
    value.extend_from_slice(&6i64.to_be_bytes());
    value.extend_from_slice(&7i64.to_be_bytes());
    let want_value = json!({"offset": 5, "metadata": "abc", "commitTimestamp": 6, "expireTimestamp": 7,
        "leaderEpoch": null});
    for cut in [None, Some(keys.len() / 2)] {
        let key_rows: Vec<Option<&[u8]>> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| Some(if Some(i) == cut { &k[..k.len() - 1] } else { &k[..] }))
            .collect();
        let value_rows: Vec<Option<&[u8]>> = vec![Some(&value[..]); keys.len()];
        let batch = super::decode_internal(&defs, Kind::ConsumerOffsets, &key_rows, &value_rows, None, false);
        for (row, want) in expected.iter().enumerate() {
            let got = row_json(column(&batch, "offset_commit"), row);
            if Some(row) == cut {
                assert!(
                    column(&batch, "error").is_valid(row),
                    "row {row}: the cut key is an error"
                );
                assert_eq!(got, Value::Null);
                continue;
            }
            assert!(column(&batch, "error").is_null(row), "row {row}");
            assert_eq!(&got["key"], want, "row {row}");
            assert_subset(&want_value, &got["value"], "value");
        }
    }
}
