//! The typed-value parsers (`ValueFormat::parse`) on arbitrary values, with a
//! fixed schema per format: JSON (Spark's `from_json` rules), Avro (plain
//! datums, or Confluent-framed with two writer versions read as the newer)
//! and Protobuf (plain, or Confluent-framed with message indexes).
//!
//! Input: a selector byte (bit 0: Confluent framing), then values, each a
//! length byte and that many bytes (`0xff`: a null value; a length past the
//! end takes what is left).
//!
//! Beyond "no panic": `on_value_error="null"` never fails and keeps the row
//! count; each row parsed alone is the reference, so a row is null exactly
//! when it fails alone (or is null), and otherwise equals its parse alone;
//! raise mode fails at the first row that fails alone, or gives the null
//! mode's column.

use std::sync::OnceLock;

use arrow_array::{Array, BinaryArray};
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use kafkabatch::values::protobuf::{ProtoSource, Protobuf, MAX_RECURSION};
use kafkabatch::values::{OnValueError, ValueFormat};

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Json,
    Avro,
    Protobuf,
}

/// The selector byte and the values of an input.
pub fn split(input: &[u8]) -> (u8, Vec<Option<&[u8]>>) {
    let Some((&selector, mut rest)) = input.split_first() else {
        return (0, Vec::new());
    };
    let mut values = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        if len == 0xff {
            values.push(None);
            rest = tail;
            continue;
        }
        let n = usize::from(len).min(tail.len());
        values.push(Some(&tail[..n]));
        rest = &tail[n..];
    }
    (selector, values)
}

pub fn check(kind: Kind, input: &[u8]) {
    let (selector, values) = split(input);
    let format = format(kind, selector & 1 == 1);
    let column = BinaryArray::from(values.clone());
    let whole = format
        .parse(&column, 0, OnValueError::Null)
        .unwrap_or_else(|e| panic!("null mode failed: {e:?}"));
    assert_eq!(whole.len(), values.len(), "null mode keeps every row");
    let mut first_bad = None;
    for (i, value) in values.iter().enumerate() {
        let alone = BinaryArray::from(vec![*value]);
        match format.parse(&alone, 0, OnValueError::Raise) {
            Ok(one) => {
                assert_eq!(one.len(), 1);
                assert!(
                    whole.slice(i, 1).to_data() == one.to_data(),
                    "row {i} differs from its parse alone"
                );
            }
            Err(error) => {
                assert_eq!(error.row, 0);
                assert!(!error.reason.is_empty());
                assert!(
                    whole.is_null(i),
                    "row {i} fails alone ({}) but not in the column",
                    error.reason
                );
                first_bad.get_or_insert(i);
            }
        }
    }
    match format.parse(&column, 0, OnValueError::Raise) {
        Ok(raised) => {
            assert_eq!(first_bad, None, "raise mode passed a row that fails alone");
            assert!(
                raised.to_data() == whole.to_data(),
                "raise and null mode differ without errors"
            );
        }
        Err(error) => assert_eq!(Some(error.row), first_bad, "raise mode names the first bad row"),
    }
}

fn format(kind: Kind, framed: bool) -> &'static ValueFormat {
    static FORMATS: OnceLock<[ValueFormat; 6]> = OnceLock::new();
    let formats = FORMATS.get_or_init(|| {
        [
            json(false),
            json(true),
            ValueFormat::avro_plain(AVRO_V1).expect("the Avro schema"),
            ValueFormat::avro_confluent(&[(1, AVRO_V1.into()), (2, AVRO_V2.into())], None).expect("the Avro schemas"),
            ValueFormat::Protobuf(Protobuf::plain(&proto_files(), "shop.Order", MAX_RECURSION).expect("the proto")),
            ValueFormat::Protobuf(
                Protobuf::confluent(&[(5, proto_files())], None, &[], MAX_RECURSION).expect("the proto"),
            ),
        ]
    });
    let i = match kind {
        Kind::Json => 0,
        Kind::Avro => 2,
        Kind::Protobuf => 4,
    };
    &formats[i + usize::from(framed)]
}

fn json(confluent: bool) -> ValueFormat {
    let inner = Fields::from(vec![Field::new("x", DataType::Boolean, true)]);
    let entries = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Int64, true),
    ]);
    let fields = vec![
        Field::new("a", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("f", DataType::Float64, true),
        Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("l", DataType::new_list(DataType::Int32, true), true),
        Field::new(
            "m",
            DataType::Map(
                std::sync::Arc::new(Field::new("entries", DataType::Struct(entries), false)),
                false,
            ),
            true,
        ),
        Field::new("o", DataType::Struct(inner), true),
    ];
    ValueFormat::json(DataType::Struct(fields.into()), confluent).expect("the JSON type")
}

const AVRO_V1: &str = r#"{"type": "record", "name": "R", "fields": [
    {"name": "id", "type": "long"},
    {"name": "s", "type": "string"},
    {"name": "u", "type": ["null", "double", "string"]},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "l", "type": {"type": "array", "items": {"type": "record", "name": "I",
        "fields": [{"name": "n", "type": "int"}]}}},
    {"name": "m", "type": {"type": "map", "values": "bytes"}},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}
]}"#;

const AVRO_V2: &str = r#"{"type": "record", "name": "R", "fields": [
    {"name": "id", "type": "long"},
    {"name": "s", "type": "string"},
    {"name": "u", "type": ["null", "double", "string"]},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "l", "type": {"type": "array", "items": {"type": "record", "name": "I",
        "fields": [{"name": "n", "type": "int"}]}}},
    {"name": "m", "type": {"type": "map", "values": "bytes"}},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "added", "type": "string", "default": "x"}
]}"#;

const SHOP: &str = r#"
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
enum Kind { KIND_UNSET = 0; BOOK = 1; }
message Order {
    int32 id = 1;
    uint64 big = 2;
    optional string note = 3;
    Kind kind = 4;
    repeated sint64 qty = 5;
    map<string, Line> lines = 6;
    Line first = 7;
    google.protobuf.Timestamp at = 8;
    google.protobuf.Duration took = 9;
    google.protobuf.BytesValue maybe = 10;
    oneof pick { string a = 11; fixed32 b = 12; }
    Order parent = 13;
    repeated float scores = 14;
    bytes blob = 15;
    message Line { string sku = 1; bool ok = 2; }
}
message Other { double d = 1; }
"#;

fn proto_files() -> Vec<(String, ProtoSource)> {
    vec![("shop.proto".into(), ProtoSource::Text(SHOP.into()))]
}
