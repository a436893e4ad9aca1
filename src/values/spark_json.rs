//! JSON values read as Spark's `from_json` reads them (Spark's `JacksonParser`),
//! where arrow-json's defaults differ:
//!
//! - a string field takes any JSON value: a string as is, a number or boolean
//!   as its text, an object or array as its compact JSON text (`{"x":1}`);
//! - an integer field takes only integer literals: `1.5`, `1e2` and `"5"` are
//!   errors (Spark: null), and out-of-range ones are errors too;
//! - a floating-point field takes numbers and the strings `NaN`,
//!   `Infinity`, `-Infinity` (Jackson's non-numeric numbers), no other string;
//! - a timestamp field takes an integer as **seconds** since the epoch
//!   (arrow-json would read it in the field's unit) and a string as arrow-json
//!   parses it (ISO-8601, RFC 3339).
//!
//! Everything else is arrow-json's own decoder.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_json::reader::{ArrayDecoder, DecoderContext, DecoderFactory, Tape, TapeElement};
use arrow_schema::{ArrowError, DataType, FieldRef, TimeUnit};

/// The [`DecoderFactory`] giving arrow-json Spark's rules above.
#[derive(Debug)]
pub(super) struct SparkJson;

impl DecoderFactory for SparkJson {
    fn make_default_decoder(
        &self,
        ctx: &DecoderContext,
        field: &FieldRef,
        is_nullable: bool,
    ) -> Result<Option<Box<dyn ArrayDecoder>>, ArrowError> {
        let strict = |kind| -> Result<Option<Box<dyn ArrayDecoder>>, ArrowError> {
            Ok(Some(Box::new(Strict {
                inner: ctx.make_builtin_decoder(field, is_nullable)?,
                kind,
            })))
        };
        match field.data_type() {
            DataType::Utf8 => Ok(Some(Box::new(Text { is_nullable }))),
            t if t.is_integer() => strict(Kind::Integer),
            t if t.is_floating() => strict(Kind::Float),
            DataType::Timestamp(unit, _) => strict(Kind::Timestamp(*unit)),
            _ => Ok(None),
        }
    }
}

/// Any JSON value as text.
struct Text {
    is_nullable: bool,
}

impl ArrayDecoder for Text {
    fn decode(&mut self, tape: &Tape<'_>, pos: &[u32]) -> Result<ArrayRef, ArrowError> {
        // Sized by a first pass, as arrow-json's own string decoder is: growing
        // the value buffer by doubling showed as a tenth of all the copying.
        let bytes: usize = pos
            .iter()
            .map(|&p| match tape.get(p) {
                TapeElement::String(i) | TapeElement::Number(i) => tape.get_string(i).len(),
                _ => 8,
            })
            .sum();
        let mut builder = StringBuilder::with_capacity(pos.len(), bytes);
        let mut scratch = String::new();
        for &p in pos {
            match tape.get(p) {
                TapeElement::Null if self.is_nullable => builder.append_null(),
                TapeElement::Null => return Err(ArrowError::JsonError("null for a non-nullable string".into())),
                TapeElement::String(i) => builder.append_value(tape.get_string(i)),
                _ => {
                    scratch.clear();
                    write_compact(tape, p, &mut scratch);
                    builder.append_value(&scratch);
                }
            }
        }
        Ok(Arc::new(builder.finish()))
    }
}

/// The value at `idx` as compact JSON, as Jackson's `copyCurrentStructure` writes it.
fn write_compact(tape: &Tape<'_>, idx: u32, out: &mut String) -> u32 {
    match tape.get(idx) {
        TapeElement::StartObject(end) | TapeElement::StartList(end) => {
            let object = matches!(tape.get(idx), TapeElement::StartObject(_));
            out.push(if object { '{' } else { '[' });
            let mut cur = idx + 1;
            let mut first = true;
            while cur < end {
                if !first {
                    out.push(',');
                }
                first = false;
                cur = write_compact(tape, cur, out);
                if object {
                    out.push(':');
                    cur = write_compact(tape, cur, out);
                }
            }
            out.push(if object { '}' } else { ']' });
            end + 1
        }
        TapeElement::String(i) => {
            write_json_string(tape.get_string(i), out);
            idx + 1
        }
        TapeElement::Number(i) => {
            out.push_str(tape.get_string(i));
            idx + 1
        }
        TapeElement::True => {
            out.push_str("true");
            idx + 1
        }
        TapeElement::False => {
            out.push_str("false");
            idx + 1
        }
        TapeElement::Null => {
            out.push_str("null");
            idx + 1
        }
        // Only made by arrow-json's serde path, never from text; written for completeness.
        TapeElement::I64(high) => {
            let low = match tape.get(idx + 1) {
                TapeElement::I32(low) => low as u32,
                _ => 0,
            };
            let _ = write!(out, "{}", (i64::from(high) << 32) | i64::from(low));
            idx + 2
        }
        TapeElement::I32(v) => {
            let _ = write!(out, "{v}");
            idx + 1
        }
        TapeElement::F64(high) => {
            let low = match tape.get(idx + 1) {
                TapeElement::F32(low) => low,
                _ => 0,
            };
            let _ = write!(out, "{}", f64::from_bits((u64::from(high) << 32) | u64::from(low)));
            idx + 2
        }
        TapeElement::F32(v) => {
            let _ = write!(out, "{}", f32::from_bits(v));
            idx + 1
        }
        // EndObject/EndList are stepped over by their start; the enum is non-exhaustive.
        _ => idx + 1,
    }
}

/// `text` as a JSON string literal (RFC 8259 §7: quotes, backslashes and control characters escaped).
pub(crate) fn write_json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[derive(Clone, Copy)]
enum Kind {
    Integer,
    Float,
    Timestamp(TimeUnit),
}

/// arrow-json's decoder behind Spark's checks on what a number may be.
struct Strict {
    inner: Box<dyn ArrayDecoder>,
    kind: Kind,
}

impl ArrayDecoder for Strict {
    fn decode(&mut self, tape: &Tape<'_>, pos: &[u32]) -> Result<ArrayRef, ArrowError> {
        let mut seconds: Vec<(usize, i64)> = Vec::new();
        for (row, &p) in pos.iter().enumerate() {
            match (tape.get(p), self.kind) {
                (TapeElement::Number(i), Kind::Integer) if !is_integer(tape.get_string(i)) => {
                    return Err(ArrowError::JsonError(format!(
                        "{} is not an integer (Spark's from_json reads it as null)",
                        tape.get_string(i)
                    )))
                }
                (TapeElement::Number(i), Kind::Timestamp(_)) => {
                    let text = tape.get_string(i);
                    let value =
                        text.parse::<i64>().ok().filter(|_| is_integer(text)).ok_or_else(|| {
                            ArrowError::JsonError(format!("{text} is not whole seconds for a timestamp"))
                        })?;
                    seconds.push((row, value));
                }
                (TapeElement::String(i), Kind::Integer) => {
                    return Err(ArrowError::JsonError(format!(
                        "string {:?} for an integer field (Spark's from_json reads it as null)",
                        tape.get_string(i)
                    )))
                }
                (TapeElement::String(i), Kind::Float)
                    if !matches!(tape.get_string(i), "NaN" | "Infinity" | "-Infinity" | "+Infinity") =>
                {
                    return Err(ArrowError::JsonError(format!(
                        "string {:?} for a floating-point field (Spark's from_json reads it as null)",
                        tape.get_string(i)
                    )))
                }
                _ => {}
            }
        }
        let decoded = self.inner.decode(tape, pos)?;
        let Kind::Timestamp(unit) = self.kind else {
            return Ok(decoded);
        };
        if seconds.is_empty() {
            return Ok(decoded);
        }
        // arrow-json read those integers in the field's unit; Spark reads seconds.
        let per_second: i64 = match unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        };
        let data = decoded.to_data();
        let mut values: Vec<i64> = data.buffer::<i64>(0)[..decoded.len()].to_vec();
        for (row, s) in seconds {
            values[row] = s
                .checked_mul(per_second)
                .ok_or_else(|| ArrowError::JsonError(format!("{s} seconds overflow the timestamp")))?;
        }
        let array = PrimitiveArray::<arrow_array::types::Int64Type>::new(values.into(), decoded.nulls().cloned());
        Ok(arrow_array::make_array(
            array
                .into_data()
                .into_builder()
                .data_type(decoded.data_type().clone())
                .build()?,
        ))
    }
}

/// A JSON number written as an integer: no fraction, no exponent.
fn is_integer(text: &str) -> bool {
    !text.contains(['.', 'e', 'E'])
}

/// How deep arrays and objects may nest in one value: Jackson's default
/// (`StreamReadConstraints.DEFAULT_MAX_DEPTH`), which Spark's `from_json` keeps.
pub(crate) const MAX_NESTING_DEPTH: usize = 1000;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, ArrayRef, BinaryArray};
    use arrow_schema::{DataType, Field};

    use crate::values::{OnValueError, ValueFormat};

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn deep_nesting_in_any_field_fails_its_value_only() {
        let fields = vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("l", DataType::new_list(DataType::Int64, true), true),
            Field::new(
                "r",
                DataType::Struct(vec![Field::new("x", DataType::Int64, true)].into()),
                true,
            ),
            Field::new("b", DataType::Int64, true),
        ];
        let format = ValueFormat::json(DataType::Struct(fields.into()), false).unwrap();
        let deep = nested(100_000);
        let docs: Vec<String> = vec![
            r#"{"b": 1}"#.into(),
            format!(r#"{{"s": {deep}, "b": 2}}"#),
            format!(r#"{{"l": {deep}, "b": 3}}"#),
            format!(r#"{{"r": {{"x": {deep}}}, "b": 4}}"#),
            format!(r#"{{"unnamed": {deep}, "b": 5}}"#),
            format!(r#"{{"s": {}, "b": 6}}"#, nested(999)),
            format!(r#"{{"s": "{deep}", "b": 7}}"#),
        ];
        let values: Vec<Option<&[u8]>> = docs.iter().map(|d| Some(d.as_bytes())).collect();
        let values: ArrayRef = Arc::new(BinaryArray::from(values));
        // Both paths: the schema-driven one and arrow-json's (the fallback).
        for fast in [true, false] {
            let parse = |on_error| {
                if fast {
                    format.parse(values.as_ref(), 0, on_error)
                } else {
                    crate::values::without_fast_path(|| format.parse(values.as_ref(), 0, on_error))
                }
            };
            check_deep(parse(OnValueError::Raise), parse(OnValueError::Null), &docs, &deep);
        }
    }

    fn check_deep(
        raised: Result<ArrayRef, crate::values::RowError>,
        nulled: Result<ArrayRef, crate::values::RowError>,
        docs: &[String],
        deep: &str,
    ) {
        let err = raised.unwrap_err();
        assert_eq!(err.row, 1);
        assert!(
            err.reason.contains("deeper than 1000 levels at byte 1005"),
            "{}",
            err.reason
        );
        let out = nulled.unwrap();
        let nulls: Vec<bool> = (0..docs.len()).map(|i| out.is_null(i)).collect();
        assert_eq!(nulls, [false, true, true, true, true, false, false]);
        let out = out.as_struct();
        let b = out.column(3).as_primitive::<Int64Type>();
        assert_eq!((b.value(0), b.value(5), b.value(6)), (1, 6, 7));
        let s = out.column(0).as_string::<i32>();
        assert_eq!(
            s.value(5),
            nested(999),
            "1000 levels (999 in the field) are within Jackson's limit"
        );
        assert_eq!(s.value(6), deep, "brackets inside a string are text");
    }
}
