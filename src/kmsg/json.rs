//! The JSON-text form of a decoded row, as kafka-dump-log's decoders print
//! it: Kafka's JSON converters' field names (camelCase), only the fields of
//! the record's version, bytes in base64, UUIDs in Kafka's base64 form.
//! A consumer group member's `subscription` and `assignment` are printed
//! decoded when they are (as kafka-dump-log's offsets decoder does).
//! Coordinator records: `{"key":{"type":"1","data":{..}},"payload":{"version":"3","data":{..}}}`
//! (`"payload":null` for a tombstone); metadata and control records:
//! `{"type":"TOPIC_RECORD","version":0,"data":{..}}`.

use std::fmt::Write;

use base64::Engine;

use crate::values::write_json_string;

use super::columns::{camel_case, Col, StructCol, UNKNOWN_TAGS};
use super::model::{FieldType, Registry};
use super::topics::{TableDecoder, ASSIGNMENT_COLUMN, SUBSCRIPTION_COLUMN};

pub struct Head {
    pub key_version: Option<i16>,
    pub value_version: Option<i16>,
    pub tombstone: bool,
}

/// `TopicRecord` -> `TOPIC_RECORD` (Kafka's `MetadataRecordType` names).
fn upper_snake(name: &str) -> String {
    super::topics::snake_case(name).to_uppercase()
}

/// The JSON text of the row being written (the last row of type `t`'s column).
pub(crate) fn row_json(dec: &TableDecoder<'_>, t: usize, head: &Head) -> String {
    let (defs, types, cols) = dec.parts();
    let rt = &types[t];
    let col = &cols[t];
    let row = col.len.saturating_sub(1);
    let reg = &defs.reg;
    let mut out = String::with_capacity(256);
    let value_msg = &reg.messages[rt.value];
    match rt.key {
        Some(k) => {
            let key_msg = &reg.messages[k];
            let (Some(Col::Struct(kc)), Some(Col::Struct(vc))) = (col.children.first(), col.children.get(1)) else {
                return "null".into();
            };
            let kv = head.key_version.unwrap_or(0);
            let _ = write!(out, "{{\"key\":{{\"type\":\"{kv}\",\"data\":");
            write_struct(reg, key_msg.root, kv, kc, row, &mut out);
            out.push_str("},\"payload\":");
            match head.value_version {
                Some(vv) if !head.tombstone => {
                    let _ = write!(out, "{{\"version\":\"{vv}\",\"data\":");
                    write_struct(reg, value_msg.root, vv, vc, row, &mut out);
                    out.push_str("}}");
                }
                _ => out.push_str("null}"),
            }
        }
        None => {
            let v = head.value_version.unwrap_or(0);
            let _ = write!(
                out,
                "{{\"type\":\"{}\",\"version\":{v},\"data\":",
                upper_snake(&rt.name)
            );
            write_struct(reg, value_msg.root, v, col, row, &mut out);
            out.push('}');
        }
    }
    out
}

fn write_struct(reg: &Registry, id: usize, v: i16, col: &StructCol, i: usize, out: &mut String) {
    if !col.nulls.is_valid(i) {
        out.push_str("null");
        return;
    }
    out.push('{');
    let def = &reg.structs[id];
    let mut first = true;
    for (fi, f) in def.fields.iter().enumerate() {
        if !f.versions.contains(v) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        let name = camel_case(&f.name);
        write_json_string(&name, out);
        out.push(':');
        // A consumer group member's subscription and assignment: decoded, as
        // kafka-dump-log prints them (the bytes when they are not decoded).
        let decoded = match name.as_str() {
            "subscription" => Some(SUBSCRIPTION_COLUMN),
            "assignment" => Some(ASSIGNMENT_COLUMN),
            _ => None,
        }
        .and_then(|extra| col.fields.iter().position(|x| x.name() == extra))
        .filter(|&ci| !col.children[ci].is_null_at(i));
        match decoded {
            Some(ci) => write_value(reg, None, v, &col.children[ci], i, out),
            None => write_value(reg, Some(&f.ty), v, &col.children[fi], i, out),
        }
    }
    out.push('}');
}

fn write_value(reg: &Registry, ty: Option<&FieldType>, v: i16, col: &Col, i: usize, out: &mut String) {
    if col.is_null_at(i) {
        out.push_str("null");
        return;
    }
    match col {
        Col::Bool(b, _) => out.push_str(if b.get_bit(i) { "true" } else { "false" }),
        Col::I8(c) => {
            let _ = write!(out, "{}", c.vals[i]);
        }
        Col::I16(c) => {
            let _ = write!(out, "{}", c.vals[i]);
        }
        Col::U16(c) => {
            let _ = write!(out, "{}", c.vals[i]);
        }
        Col::I32(c) => {
            let _ = write!(out, "{}", c.vals[i]);
        }
        Col::U32(c) => {
            let _ = write!(out, "{}", c.vals[i]);
        }
        Col::I64(c) => {
            let _ = write!(out, "{}", c.vals[i]);
        }
        Col::F64(c) => {
            let x = c.vals[i];
            if x.is_finite() {
                let _ = write!(out, "{x:?}");
            } else {
                write_json_string(&x.to_string(), out);
            }
        }
        Col::Uuid(c) => write_json_string(&super::read::uuid_text(&c.vals[i]), out),
        Col::Str(c) => {
            let bytes = &c.data[c.offsets[i] as usize..c.offsets[i + 1] as usize];
            write_json_string(&String::from_utf8_lossy(bytes), out);
        }
        Col::Bin(c) => {
            let bytes = &c.data[c.offsets[i] as usize..c.offsets[i + 1] as usize];
            write_json_string(&base64::engine::general_purpose::STANDARD.encode(bytes), out);
        }
        Col::List(l) => {
            let (a, b) = (l.offsets[i] as usize, l.offsets[i + 1] as usize);
            let inner = match ty {
                Some(FieldType::Array(inner)) => Some(&**inner),
                _ => None,
            };
            out.push('[');
            for j in a..b {
                if j > a {
                    out.push(',');
                }
                write_value(reg, inner, v, &l.child, j, out);
            }
            out.push(']');
        }
        Col::Struct(s) => match ty {
            Some(FieldType::Struct(id)) => write_struct(reg, *id, v, s, i, out),
            _ => write_any_struct(reg, s, i, out),
        },
    }
}

/// A struct without its definition at hand: every non-null field.
fn write_any_struct(reg: &Registry, col: &StructCol, i: usize, out: &mut String) {
    out.push('{');
    let mut first = true;
    for (ci, field) in col.fields.iter().enumerate() {
        if field.name() == UNKNOWN_TAGS || col.children[ci].is_null_at(i) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        write_json_string(field.name(), out);
        out.push(':');
        write_value(reg, None, 0, &col.children[ci], i, out);
    }
    out.push('}');
}
