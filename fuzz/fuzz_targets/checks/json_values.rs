//! Typed JSON values: the schema-driven path (`values::json_fast`) against
//! arrow-json's (`without_fast_path`), on random schemas and documents.
//!
//! Input: a schema read from the first bytes (see [`schema`]), then documents
//! separated by 0xFF (a byte no JSON text holds). Invariants:
//! - nothing panics, whatever the documents (deep nesting included);
//! - with `on_value_error = null`, a document that is JSON (serde_json's
//!   grammar, RFC 8259) gives the same row both ways; one that is not is a
//!   null row on the fast path (arrow-json's tape tolerates some such text);
//! - with `raise`, when every document is JSON, both give the same column
//!   or fail at the same row.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray};
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use kafkabatch::values::{without_fast_path, OnValueError, ValueFormat};

/// A type from `bytes` (consumed from the front), at most `depth` levels of nesting.
pub fn schema(bytes: &mut &[u8], depth: u32) -> DataType {
    fn next(bytes: &mut &[u8]) -> u8 {
        let (&b, rest) = bytes.split_first().unwrap_or((&0, &[]));
        *bytes = rest;
        b
    }
    let pick = next(bytes);
    let leaf = |b: u8| match b % 12 {
        0 => DataType::Boolean,
        1 => DataType::Int8,
        2 => DataType::Int32,
        3 => DataType::Int64,
        4 => DataType::UInt8,
        5 => DataType::UInt64,
        6 => DataType::Float32,
        7 => DataType::Float64,
        8 => DataType::Timestamp(TimeUnit::Millisecond, None),
        9 => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        _ => DataType::Utf8,
    };
    if depth == 0 || pick % 16 < 9 {
        return leaf(pick / 16);
    }
    let nullable = pick & 0x80 == 0;
    match pick % 16 {
        9..=11 => {
            let n = 1 + next(bytes) % 4;
            let fields: Vec<Field> = (0..n)
                .map(|i| {
                    let flags = next(bytes);
                    let name = ["a", "b", "c", "é", "a\"b"][usize::from(flags % 5)];
                    let name = if flags & 8 != 0 {
                        format!("{name}{i}")
                    } else {
                        name.to_string()
                    };
                    Field::new(name, schema(bytes, depth - 1), flags & 0x40 == 0)
                })
                .collect();
            DataType::Struct(Fields::from(fields))
        }
        12 | 13 => DataType::List(Arc::new(Field::new("item", schema(bytes, depth - 1), nullable))),
        14 => DataType::LargeList(Arc::new(Field::new("item", schema(bytes, depth - 1), nullable))),
        _ => DataType::Map(
            Arc::new(Field::new(
                "entries",
                DataType::Struct(Fields::from(vec![
                    Field::new("keys", DataType::Utf8, false),
                    Field::new("values", schema(bytes, depth - 1), nullable),
                ])),
                false,
            )),
            false,
        ),
    }
}

/// Whether `doc` is one JSON text by serde_json's grammar, or `None` when
/// serde_json can't tell (nesting past its recursion limit).
fn is_json(doc: &[u8]) -> Option<bool> {
    match serde_json::from_slice::<serde::de::IgnoredAny>(doc) {
        Ok(_) => Some(true),
        Err(e) if e.to_string().contains("recursion limit") => None,
        Err(_) => Some(false),
    }
}

/// Run the checks on one input; panics on a violation.
pub fn check(input: &[u8]) {
    let mut rest = input;
    let data_type = schema(&mut rest, 3);
    let Ok(format) = ValueFormat::json(data_type.clone(), false) else {
        return;
    };
    let docs: Vec<&[u8]> = rest.split(|&b| b == 0xFF).collect();
    let column: ArrayRef = Arc::new(BinaryArray::from(docs.iter().map(|d| Some(*d)).collect::<Vec<_>>()));
    let fast = format
        .parse(column.as_ref(), 0, OnValueError::Null)
        .expect("null mode never fails");
    let slow =
        without_fast_path(|| format.parse(column.as_ref(), 0, OnValueError::Null)).expect("null mode never fails");
    assert_eq!(fast.len(), docs.len());
    assert_eq!(fast.data_type(), &data_type);
    let mut all_json = true;
    for (i, doc) in docs.iter().enumerate() {
        match is_json(doc) {
            Some(true) => {
                let (f, s) = (fast.slice(i, 1).to_data(), slow.slice(i, 1).to_data());
                assert!(
                    f == s,
                    "row {i} differs for {data_type}\ndocument: {}\nfast: {:?}\narrow-json: {:?}",
                    String::from_utf8_lossy(doc),
                    fast.slice(i, 1),
                    slow.slice(i, 1)
                );
            }
            Some(false) => {
                all_json = false;
                // Null, unless an object repeating a name sent the piece to arrow-json.
                assert!(
                    fast.is_null(i) || fast.slice(i, 1).to_data() == slow.slice(i, 1).to_data(),
                    "row {i} is not JSON but was read: {}",
                    String::from_utf8_lossy(doc)
                );
            }
            None => all_json = false,
        }
    }
    if all_json {
        let fast = format.parse(column.as_ref(), 0, OnValueError::Raise);
        let slow = without_fast_path(|| format.parse(column.as_ref(), 0, OnValueError::Raise));
        match (fast, slow) {
            (Ok(f), Ok(s)) => assert!(f.to_data() == s.to_data(), "raise mode columns differ"),
            (Err(f), Err(s)) => assert_eq!(f.row, s.row, "first bad row: {} vs {}", f.reason, s.reason),
            (f, s) => panic!("raise mode: fast {:?} vs arrow-json {:?}", f.err(), s.err()),
        }
    }
}

/// A small deterministic generator (xorshift), for documents made to fit a type.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A fuzz input: the schema bytes, then `rows` documents mostly fitting the
/// schema they give (some with values that don't, unknown or missing
/// fields, nesting, escapes and whitespace), separated by 0xFF.
pub fn input(schema_bytes: &[u8], rng: &mut Rng, rows: usize) -> Vec<u8> {
    let mut rest = schema_bytes;
    let data_type = schema(&mut rest, 3);
    let mut out = schema_bytes[..schema_bytes.len() - rest.len()].to_vec();
    for row in 0..rows {
        if row > 0 {
            out.push(0xFF);
        }
        let mut doc = String::new();
        document(&data_type, rng, 0, &mut doc);
        out.extend_from_slice(doc.as_bytes());
    }
    out
}

fn ws(rng: &mut Rng, out: &mut String) {
    out.push_str(rng.pick(&["", "", "", " ", "\n  ", "\t"]));
}

const STRINGS: &[&str] = &[
    r#""""#,
    r#""x""#,
    r#""a\"b""#,
    r#""\\""#,
    r#""\/\n\t\r\b\f""#,
    r#""\u00e9t\u00E9""#,
    r#""\ud83d\ude00 \ud840\udc00""#,
    r#""\u0000\u001f""#,
    "\"é日本😀\"",
    r#""2024-05-01T00:00:01Z""#,
    r#""2024-05-01 00:00:01.5+02:00""#,
    r#""NaN""#,
    r#""Infinity""#,
    r#""-Infinity""#,
    r#""5""#,
    r#""true""#,
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "7",
    "127",
    "128",
    "-129",
    "255",
    "256",
    "1.5",
    "-2.25",
    "1e2",
    "1E-2",
    "2.5e+3",
    "0.1",
    "2147483648",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e400",
    "1714521600",
    "3.4028236e38",
    "1.00000005960464477539",
];

/// Any JSON value, up to a few levels deep.
fn any(rng: &mut Rng, depth: u32, out: &mut String) {
    match rng.below(if depth > 3 { 4 } else { 7 }) {
        0 => out.push_str(rng.pick(NUMBERS)),
        1 => out.push_str(rng.pick(STRINGS)),
        2 => out.push_str(rng.pick(&["true", "false", "null"])),
        3 => out.push_str(rng.pick(NUMBERS)),
        4 | 5 => {
            out.push('[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                any(rng, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(rng.pick(&[r#""a""#, r#""z""#, r#""\u0061""#, r#""é""#]));
                out.push(':');
                ws(rng, out);
                any(rng, depth + 1, out);
            }
            out.push('}');
        }
    }
}

/// A value for `data_type`: most of the time one that fits.
fn document(data_type: &DataType, rng: &mut Rng, depth: u32, out: &mut String) {
    ws(rng, out);
    match rng.below(20) {
        0 => {
            out.push_str("null");
            return;
        }
        1 => {
            any(rng, depth, out);
            return;
        }
        _ => {}
    }
    match data_type {
        DataType::Boolean => out.push_str(rng.pick(&["true", "false"])),
        DataType::Int8 | DataType::Int32 | DataType::Int64 | DataType::UInt8 | DataType::UInt64 => {
            if rng.below(3) == 0 {
                out.push_str(rng.pick(NUMBERS));
            } else {
                out.push_str(&(rng.next() as i64 % 200).to_string());
            }
        }
        DataType::Float32 | DataType::Float64 => match rng.below(4) {
            0 => out.push_str(rng.pick(NUMBERS)),
            1 => out.push_str(rng.pick(&[
                r#""NaN""#,
                r#""Infinity""#,
                r#""-Infinity""#,
                r#""+Infinity""#,
                r#""1.5""#,
            ])),
            _ => out.push_str(&format!(
                "{:?}",
                f64::from_bits(rng.next() >> 2) * 0.0 + (rng.next() % 100000) as f64 / 7.0
            )),
        },
        DataType::Timestamp(_, _) => match rng.below(3) {
            0 => out.push_str(rng.pick(NUMBERS)),
            1 => out.push_str(rng.pick(&[
                r#""2024-05-01T00:00:01Z""#,
                r#""2024-05-01 00:00:01.5+02:00""#,
                r#""2024-05-01""#,
                r#""yesterday""#,
            ])),
            _ => out.push_str(&(rng.next() % 2_000_000_000).to_string()),
        },
        DataType::Utf8 => {
            if rng.below(3) == 0 {
                any(rng, depth, out);
            } else {
                out.push_str(rng.pick(STRINGS));
            }
        }
        DataType::Struct(fields) => {
            out.push('{');
            let mut first = true;
            let mut order: Vec<usize> = (0..fields.len()).collect();
            if rng.below(3) == 0 {
                order.reverse();
            }
            if rng.below(10) == 0 {
                order.push(0); // a repeated name
            }
            for k in order {
                if rng.below(8) == 0 {
                    continue; // missing
                }
                if !first {
                    out.push(',');
                }
                first = false;
                if rng.below(6) == 0 {
                    out.push_str(r#""unknown":"#);
                    any(rng, depth + 1, out);
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(fields[k].name()).expect("a name"));
                ws(rng, out);
                out.push(':');
                document(fields[k].data_type(), rng, depth + 1, out);
            }
            ws(rng, out);
            out.push('}');
        }
        DataType::List(item) | DataType::LargeList(item) => {
            out.push('[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                document(item.data_type(), rng, depth + 1, out);
            }
            out.push(']');
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                unreachable!("map entries are a struct")
            };
            out.push('{');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(rng.pick(&[r#""k""#, r#""k""#, r#""\u006b2""#, r#""""#]));
                out.push(':');
                document(kv[1].data_type(), rng, depth + 1, out);
            }
            out.push('}');
        }
        _ => any(rng, depth, out),
    }
    ws(rng, out);
}
