//! Schema ids carried in record headers instead of the value's prefix.
//!
//! Newer Confluent serializers (`schema.id.serializer=header_schema_id_serializer`)
//! leave the value bare and put the schema id in the `__value_schema_id` (or
//! `__key_schema_id`) header: magic byte 1 and the schema's 16-byte GUID, or
//! magic byte 0 and the 4-byte id, then for Protobuf the message indexes. The
//! deserializers look at the header first, then at the prefix. Here a value
//! with such a header gets the prefix it stands for (magic 0, id, indexes), so
//! the Confluent parsers read one framing; a GUID is given the local id its
//! caller fetched it under, else [`UNKNOWN_GUID`], which no schema has
//! (the rules of the Python package's `kafkabatch.values.headers`).

use std::collections::BTreeMap;

use arrow_array::builder::BinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

/// The header that holds a column's schema id.
pub fn header_key(column: &str) -> Option<&'static str> {
    match column {
        "value" => Some("__value_schema_id"),
        "key" => Some("__key_schema_id"),
        _ => None,
    }
}

/// The id of a GUID no local id was given: no schema has it.
pub const UNKNOWN_GUID: u32 = 0xFFFF_FFFF;

/// The Confluent prefix a schema-id header stands for (`None`: not a schema id).
pub fn header_prefix(header: &[u8], guid_ids: &BTreeMap<[u8; 16], u32>) -> Option<Vec<u8>> {
    match header {
        [0, _, _, _, _, ..] => Some(header.to_vec()),
        [1, rest @ ..] if rest.len() >= 16 => {
            let guid: [u8; 16] = rest[..16].try_into().ok()?;
            let id = guid_ids.get(&guid).copied().unwrap_or(UNKNOWN_GUID);
            let mut prefix = Vec::with_capacity(5 + rest.len() - 16);
            prefix.push(0);
            prefix.extend_from_slice(&id.to_be_bytes());
            prefix.extend_from_slice(&rest[16..]);
            Some(prefix)
        }
        _ => None,
    }
}

/// `values` as a `Binary` column (binary views and large binary are copied; other types are refused).
pub fn binary_column(values: &dyn Array, column: &str) -> Result<ArrayRef, String> {
    match values.data_type() {
        DataType::Binary => Ok(arrow_array::make_array(values.to_data())),
        DataType::BinaryView | DataType::LargeBinary => {
            arrow_cast::cast(&arrow_array::make_array(values.to_data()), &DataType::Binary).map_err(|e| e.to_string())
        }
        other => Err(format!(
            "{column} must be binary to take a schema id from the headers, not {other}"
        )),
    }
}

/// The key and value columns of a `headers` column (see [`with_header_frames`]).
fn header_entries(
    headers: &dyn Array,
) -> Result<
    (
        &arrow_array::ListArray,
        &arrow_array::StringArray,
        &arrow_array::BinaryArray,
    ),
    String,
> {
    let Some(lists) = headers.as_list_opt::<i32>() else {
        return Err(format!(
            "headers must be a list of key, value structs, not {}",
            headers.data_type()
        ));
    };
    let entries = lists
        .values()
        .as_struct_opt()
        .ok_or("headers must be a list of key, value structs")?;
    let (Some(keys), Some(header_values)) = (
        entries.column_by_name("key").and_then(|k| k.as_string_opt::<i32>()),
        entries.column_by_name("value").and_then(|v| v.as_binary_opt::<i32>()),
    ) else {
        return Err("headers must be a list of (key string, value binary) structs".into());
    };
    Ok((lists, keys, header_values))
}

/// The distinct schema GUIDs in `column`'s schema-id headers (magic byte 1), in byte order:
/// the schemas a caller fetches by GUID and gives local ids for [`with_header_frames`].
pub fn header_guids(headers: &dyn Array, column: &str) -> Result<Vec<[u8; 16]>, String> {
    let Some(key) = header_key(column) else {
        return Ok(Vec::new());
    };
    let (lists, keys, header_values) = header_entries(headers)?;
    let offsets = lists.value_offsets();
    let (start, end) = (offsets[0] as usize, offsets[lists.len()] as usize);
    let mut guids = std::collections::BTreeSet::new();
    for entry in start..end {
        if keys.is_valid(entry) && keys.value(entry) == key && header_values.is_valid(entry) {
            if let [1, rest @ ..] = header_values.value(entry) {
                if let Some(guid) = rest.get(..16).and_then(|g| <[u8; 16]>::try_from(g).ok()) {
                    guids.insert(guid);
                }
            }
        }
    }
    Ok(guids.into_iter().collect())
}

/// `values` (a binary column) with the prefix of each row's schema-id header for `column` put in front
/// (`headers`: the Kafka source's `list<struct<key: string, value: binary>>` column); rows without
/// one, and null values, are left as they are. `None` when no row has such a header (nothing copied).
pub fn with_header_frames(
    values: &dyn Array,
    headers: &dyn Array,
    column: &str,
    guid_ids: &BTreeMap<[u8; 16], u32>,
) -> Result<Option<ArrayRef>, String> {
    let Some(key) = header_key(column) else {
        return Ok(None);
    };
    let (lists, keys, header_values) = header_entries(headers)?;
    if !keys.iter().any(|k| k == Some(key)) {
        return Ok(None);
    }
    let values = binary_column(values, column)?;
    let values = values.as_binary::<i32>();
    let offsets = lists.value_offsets();
    let mut out = BinaryBuilder::with_capacity(values.len(), values.value_data().len());
    let mut framed: Vec<u8> = Vec::new();
    for row in 0..values.len() {
        if values.is_null(row) {
            out.append_null();
            continue;
        }
        framed.clear();
        framed.extend_from_slice(values.value(row));
        if lists.is_valid(row) {
            // each schema-id header of the row goes in front, in header order (as the Python package does)
            for entry in offsets[row] as usize..offsets[row + 1] as usize {
                if keys.is_valid(entry) && keys.value(entry) == key && header_values.is_valid(entry) {
                    if let Some(prefix) = header_prefix(header_values.value(entry), guid_ids) {
                        framed.splice(0..0, prefix);
                    }
                }
            }
        }
        out.append_value(&framed);
    }
    let framed: ArrayRef = std::sync::Arc::new(out.finish());
    debug_assert_eq!(framed.data_type(), &DataType::Binary);
    Ok(Some(framed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{ListBuilder, StringBuilder, StructBuilder};
    use arrow_array::BinaryArray;
    use arrow_schema::{Field, Fields};

    fn headers(rows: &[&[(&str, &[u8])]]) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("key", DataType::Utf8, true),
            Field::new("value", DataType::Binary, true),
        ]);
        let mut list = ListBuilder::new(StructBuilder::from_fields(fields, 0));
        for row in rows {
            let entries = list.values();
            for (k, v) in row.iter() {
                entries.field_builder::<StringBuilder>(0).unwrap().append_value(k);
                entries.field_builder::<BinaryBuilder>(1).unwrap().append_value(v);
                entries.append(true);
            }
            list.append(true);
        }
        std::sync::Arc::new(list.finish())
    }

    #[test]
    fn ids_and_guids_become_prefixes() {
        let guid = [7u8; 16];
        let mut guid_header = vec![1u8];
        guid_header.extend_from_slice(&guid);
        guid_header.push(0); // a Protobuf message index
        let values = BinaryArray::from(vec![Some(&b"a"[..]), Some(b"b"), Some(b"c"), None]);
        let hs = headers(&[
            &[("__value_schema_id", &[0, 0, 0, 0, 9])],
            &[("other", b"x"), ("__value_schema_id", &guid_header)],
            &[("__key_schema_id", &[0, 0, 0, 0, 3])],
            &[("__value_schema_id", &[0, 0, 0, 0, 9])],
        ]);
        let known = BTreeMap::from([(guid, 0x7F00_0000)]);
        let out = with_header_frames(&values, hs.as_ref(), "value", &known)
            .unwrap()
            .unwrap();
        let out = out.as_binary::<i32>();
        assert_eq!(out.value(0), b"\0\0\0\0\x09a");
        assert_eq!(out.value(1), b"\0\x7f\0\0\0\0b");
        assert_eq!(out.value(2), b"c");
        assert!(out.is_null(3));
        let unknown = with_header_frames(&values, hs.as_ref(), "value", &BTreeMap::new())
            .unwrap()
            .unwrap();
        assert_eq!(unknown.as_binary::<i32>().value(1), b"\0\xff\xff\xff\xff\0b");
        // no header for the column: nothing copied
        let none = headers(&[&[], &[("other", b"x")], &[], &[]]);
        assert!(with_header_frames(&values, none.as_ref(), "value", &known)
            .unwrap()
            .is_none());
        // too short to be a schema id: left alone
        assert_eq!(header_prefix(&[0, 0, 1], &known), None);
        assert_eq!(header_prefix(&[2, 0, 0, 0, 1], &known), None);
    }

    #[test]
    fn guids_are_listed_once_and_views_are_framed() {
        let (a, b) = ([7u8; 16], [3u8; 16]);
        let header = |guid: &[u8; 16]| [&[1u8][..], guid, &[0]].concat();
        let (ha, hb) = (header(&a), header(&b));
        let hs = headers(&[
            &[("__value_schema_id", &ha)],
            &[("__value_schema_id", &hb), ("__key_schema_id", &header(&[9; 16]))],
            &[("__value_schema_id", &ha)],
            &[("__value_schema_id", &[1, 2, 3])],
        ]);
        assert_eq!(header_guids(hs.as_ref(), "value").unwrap(), vec![b, a]);
        assert_eq!(header_guids(hs.as_ref(), "key").unwrap(), vec![[9; 16]]);
        assert!(header_guids(hs.as_ref(), "offset").unwrap().is_empty());
        let views = arrow_array::BinaryViewArray::from(vec![&b"a"[..], b"b", b"c", b"d"]);
        let out = with_header_frames(&views, hs.as_ref(), "value", &BTreeMap::from([(a, 5)]))
            .unwrap()
            .unwrap();
        assert_eq!(out.as_binary::<i32>().value(0), b"\0\0\0\0\x05\0a");
        assert_eq!(out.as_binary::<i32>().value(3), b"d");
        let strings = arrow_array::StringArray::from(vec!["a", "b", "c", "d"]);
        let refused = with_header_frames(&strings, hs.as_ref(), "value", &BTreeMap::new()).unwrap_err();
        assert!(refused.contains("value must be binary"), "{refused}");
    }
}
