//! The encoder from the same definitions: a JSON object (field names as in
//! the definitions or in camelCase) written as Kafka's generated `write`
//! methods write the message at a version. Fields the object leaves out get
//! their defaults; tagged fields are written when the object has them, with
//! any `_unknown_tagged_fields` (`[{"tag": n, "data": <base64 or byte list>}]`)
//! merged in tag order. Used for fixtures and round trips.

use base64::Engine;
use serde_json::Value;

use super::model::{FieldDef, FieldType, MessageDef, Prim, Registry};
use super::read::int_default;
use crate::varint::write_unsigned;

type Result<T> = std::result::Result<T, String>;

/// Encode `value` as message `msg` at `version`, appending to `out`.
pub fn encode_message(reg: &Registry, msg: &MessageDef, version: i16, value: &Value, out: &mut Vec<u8>) -> Result<()> {
    if !msg.valid.contains(version) {
        return Err(format!("{} version {version} is not one of {}", msg.name, msg.valid));
    }
    let flex = msg.flexible.contains(version);
    write_struct(reg, msg.root, version, flex, value, out)
}

fn lookup<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    let camel = super::columns::camel_case(name);
    obj.get(name).or_else(|| obj.get(&camel))
}

fn write_struct(reg: &Registry, id: usize, v: i16, flex: bool, obj: &Value, out: &mut Vec<u8>) -> Result<()> {
    let def = &reg.structs[id];
    let mut tagged: Vec<(u32, Vec<u8>)> = Vec::new();
    for f in &def.fields {
        if !f.versions.contains(v) {
            continue;
        }
        let given = lookup(obj, &f.name);
        if flex && f.is_tagged_in(v) {
            if let (Some(given), Some(tag)) = (given, f.tag) {
                if is_default(f, &f.ty, given) {
                    continue;
                }
                let mut data = Vec::new();
                write_field(reg, f, &f.ty, v, true, true, given, &mut data)?;
                tagged.push((tag, data));
            }
            continue;
        }
        match given {
            Some(g) => write_field(reg, f, &f.ty, v, flex, false, g, out)?,
            None => write_default(reg, f, &f.ty, v, flex, out)?,
        }
    }
    if flex {
        if let Some(Value::Array(list)) = obj.get(super::columns::UNKNOWN_TAGS) {
            for item in list {
                let tag = item
                    .get("tag")
                    .and_then(Value::as_u64)
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or("an unknown tagged field needs a \"tag\"")?;
                let data = bytes_of(item.get("data").unwrap_or(&Value::Null))?.unwrap_or_default();
                tagged.push((tag, data));
            }
        }
        tagged.sort_by_key(|(t, _)| *t);
        write_unsigned(out, tagged.len() as u64);
        for (tag, data) in tagged {
            write_unsigned(out, tag as u64);
            write_unsigned(out, data.len() as u64);
            out.extend_from_slice(&data);
        }
    }
    Ok(())
}

/// Whether a tagged field's value is its default, which Kafka does not write.
fn is_default(f: &FieldDef, ty: &FieldType, v: &Value) -> bool {
    let d = f.default.as_deref();
    if v.is_null() {
        return d == Some("null") || matches!(ty, FieldType::Prim(Prim::Records));
    }
    if d == Some("null") {
        return false;
    }
    match ty {
        FieldType::Prim(Prim::Bool) => v.as_bool() == Some(d == Some("true")),
        FieldType::Prim(Prim::Float64) => v.as_f64() == Some(d.and_then(|t| t.parse().ok()).unwrap_or(0.0)),
        FieldType::Prim(Prim::String) => v.as_str() == Some(d.unwrap_or("")),
        FieldType::Prim(Prim::Uuid) => v.as_str() == Some("AAAAAAAAAAAAAAAAAAAAAA"),
        FieldType::Prim(Prim::Bytes) => bytes_of(v).ok().flatten().is_some_and(|b| b.is_empty()),
        FieldType::Prim(Prim::Records) => false,
        FieldType::Prim(_) => v.as_i64() == Some(int_default(d)),
        FieldType::Array(_) => v.as_array().is_some_and(Vec::is_empty),
        FieldType::Struct(_) => false,
    }
}

fn bytes_of(v: &Value) -> Result<Option<Vec<u8>>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map(Some)
            .map_err(|e| format!("bytes must be base64: {e}")),
        Value::Array(items) => items
            .iter()
            .map(|x| {
                x.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or("a byte list holds 0..255")
            })
            .collect::<std::result::Result<Vec<u8>, _>>()
            .map(Some)
            .map_err(str::to_string),
        other => Err(format!("bytes must be base64 text or a list of bytes, not {other}")),
    }
}

fn write_len(out: &mut Vec<u8>, flex: bool, wide: bool, len: Option<usize>) -> Result<()> {
    if flex {
        write_unsigned(out, len.map_or(0, |n| n as u64 + 1));
    } else if wide {
        let n = match len {
            None => -1,
            Some(n) => i32::try_from(n).map_err(|_| "too long")?,
        };
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        let n = match len {
            None => -1,
            Some(n) => i16::try_from(n).map_err(|_| "a string longer than 32767 bytes")?,
        };
        out.extend_from_slice(&n.to_be_bytes());
    }
    Ok(())
}

fn int_of(f: &FieldDef, v: &Value) -> Result<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| u as i64))
        .ok_or_else(|| format!("{} must be an integer, not {v}", f.name))
}

#[allow(clippy::too_many_arguments)]
fn write_field(
    reg: &Registry,
    f: &FieldDef,
    ty: &FieldType,
    v: i16,
    flex: bool,
    tagged: bool,
    val: &Value,
    out: &mut Vec<u8>,
) -> Result<()> {
    let nullable = f.nullable.contains(v);
    if val.is_null() {
        return match ty {
            FieldType::Prim(Prim::Records) => write_len(out, flex, true, None),
            FieldType::Prim(Prim::String) if nullable => write_len(out, flex, false, None),
            FieldType::Prim(Prim::Bytes) | FieldType::Array(_) if nullable => write_len(out, flex, true, None),
            FieldType::Struct(_) if nullable => {
                out.push(if tagged { 0 } else { 0xff });
                Ok(())
            }
            _ => Err(format!("{} is not nullable in version {v}", f.name)),
        };
    }
    match ty {
        FieldType::Prim(p) => match p {
            Prim::Bool => out.push(val.as_bool().ok_or_else(|| format!("{} must be a boolean", f.name))? as u8),
            Prim::Int8 => out.extend_from_slice(&(int_of(f, val)? as i8).to_be_bytes()),
            Prim::Int16 => out.extend_from_slice(&(int_of(f, val)? as i16).to_be_bytes()),
            Prim::Uint16 => out.extend_from_slice(&(int_of(f, val)? as u16).to_be_bytes()),
            Prim::Int32 => out.extend_from_slice(&(int_of(f, val)? as i32).to_be_bytes()),
            Prim::Uint32 => out.extend_from_slice(&(int_of(f, val)? as u32).to_be_bytes()),
            Prim::Int64 => out.extend_from_slice(&int_of(f, val)?.to_be_bytes()),
            Prim::Float64 => out.extend_from_slice(
                &val.as_f64()
                    .ok_or_else(|| format!("{} must be a number", f.name))?
                    .to_be_bytes(),
            ),
            Prim::String => {
                let s = val.as_str().ok_or_else(|| format!("{} must be a string", f.name))?;
                write_len(out, flex, false, Some(s.len()))?;
                out.extend_from_slice(s.as_bytes());
            }
            Prim::Uuid => {
                let s = val
                    .as_str()
                    .ok_or_else(|| format!("{} must be a UUID string", f.name))?;
                let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(s)
                    .map_err(|e| format!("{}: not a Kafka UUID: {e}", f.name))?;
                if b.len() != 16 {
                    return Err(format!("{}: a UUID has 16 bytes", f.name));
                }
                out.extend_from_slice(&b);
            }
            Prim::Bytes | Prim::Records => {
                let b = bytes_of(val)?.unwrap_or_default();
                write_len(out, flex, true, Some(b.len()))?;
                out.extend_from_slice(&b);
            }
        },
        FieldType::Struct(s) => {
            if nullable {
                out.push(1); // int8 1, or as a tagged field the unsigned varint 1
            }
            write_struct(reg, *s, v, flex, val, out)?;
        }
        FieldType::Array(inner) => {
            let items = val.as_array().ok_or_else(|| format!("{} must be a list", f.name))?;
            write_len(out, flex, true, Some(items.len()))?;
            for item in items {
                match &**inner {
                    FieldType::Struct(s) => write_struct(reg, *s, v, flex, item, out)?,
                    other => {
                        let plain = FieldDef {
                            nullable: super::model::Versions::NONE,
                            ..f.clone()
                        };
                        write_field(reg, &plain, other, v, flex, false, item, out)?
                    }
                }
            }
        }
    }
    Ok(())
}

fn write_default(reg: &Registry, f: &FieldDef, ty: &FieldType, v: i16, flex: bool, out: &mut Vec<u8>) -> Result<()> {
    let d = f.default.as_deref();
    if d == Some("null") {
        return write_field(reg, f, ty, v, flex, false, &Value::Null, out);
    }
    let value = match ty {
        FieldType::Prim(Prim::Bool) => Value::Bool(d == Some("true")),
        FieldType::Prim(Prim::Float64) => serde_json::json!(d.and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0)),
        FieldType::Prim(Prim::String) => Value::String(d.unwrap_or("").to_string()),
        FieldType::Prim(Prim::Uuid) => Value::String("AAAAAAAAAAAAAAAAAAAAAA".into()),
        FieldType::Prim(Prim::Bytes) => Value::Array(Vec::new()),
        FieldType::Prim(Prim::Records) => Value::Null,
        FieldType::Prim(_) => serde_json::json!(int_default(d)),
        FieldType::Array(_) => Value::Array(Vec::new()),
        FieldType::Struct(_) => Value::Object(Default::default()),
    };
    write_field(reg, f, ty, v, flex, false, &value, out)
}

/// Encode a coordinator record: key = int16 record type + key message (read
/// at the version the type gives), value = int16 version + value message.
pub fn coordinator_key(reg: &Registry, key: &MessageDef, record_type: i16, obj: &Value) -> Result<Vec<u8>> {
    let mut out = record_type.to_be_bytes().to_vec();
    let kv = if key.valid.contains(record_type) {
        record_type
    } else {
        key.valid.lo
    };
    encode_message(reg, key, kv, obj, &mut out)?;
    Ok(out)
}

pub fn coordinator_value(reg: &Registry, value: &MessageDef, version: i16, obj: &Value) -> Result<Vec<u8>> {
    let mut out = version.to_be_bytes().to_vec();
    encode_message(reg, value, version, obj, &mut out)?;
    Ok(out)
}

/// Encode a metadata record value: unsigned varints frame version 1, api
/// key and version, then the record.
pub fn metadata_value(reg: &Registry, msg: &MessageDef, version: i16, obj: &Value) -> Result<Vec<u8>> {
    let api_key = msg.api_key.ok_or_else(|| format!("{} has no apiKey", msg.name))?;
    let mut out = Vec::new();
    write_unsigned(&mut out, 1);
    write_unsigned(&mut out, api_key as u16 as u64);
    write_unsigned(&mut out, version as u16 as u64);
    encode_message(reg, msg, version, obj, &mut out)?;
    Ok(out)
}
