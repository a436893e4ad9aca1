//! `ValueFormat::parse` for Protobuf values (plain or Confluent-framed) with a
//! fixed schema: see `checks/values.rs` for the input layout and invariants.
//!
//! Then a differential check: each value of the input, read as one plain
//! message of a schema with every field shape, gives the same row through
//! the wire-format path as through prost-reflect's `DynamicMessage`, or
//! fails both ways. One difference is by design: a map field in a wire type
//! other than length-delimited fails the wire-format path (prost-reflect
//! reads a length there and goes on).
#![no_main]

mod checks;

use std::sync::OnceLock;

use arrow_array::{Array, ArrayRef, BinaryArray};
use kafkabatch::values::protobuf::{ProtoSource, Protobuf};
use kafkabatch::values::{OnValueError, ValueFormat};
use libfuzzer_sys::fuzz_target;

const SCHEMA: &str = include_str!("../../src/values/protobuf/fast/every_shape.proto");

fn formats() -> &'static (Protobuf, Protobuf) {
    static FORMATS: OnceLock<(Protobuf, Protobuf)> = OnceLock::new();
    FORMATS.get_or_init(|| {
        let files = vec![("fz.proto".to_string(), ProtoSource::Text(SCHEMA.into()))];
        let fast = Protobuf::plain(&files, "fz.All", 2).expect("the proto");
        assert!(fast.reads_the_wire_format());
        let slow = fast.through_dynamic_message();
        (fast, slow)
    })
}

fn parse(format: &Protobuf, value: &[u8]) -> Result<ArrayRef, String> {
    let values = BinaryArray::from(vec![Some(value)]);
    ValueFormat::Protobuf(format.clone())
        .parse(&values, 0, OnValueError::Raise)
        .map_err(|e| e.reason)
}

fuzz_target!(|input: &[u8]| {
    checks::values::check(checks::values::Kind::Protobuf, input);
    let (fast, slow) = formats();
    let (_, values) = checks::values::split(input);
    for value in values.into_iter().flatten() {
        match (parse(fast, value), parse(slow, value)) {
            (Ok(f), Ok(s)) => assert_eq!(f.to_data(), s.to_data(), "{value:?}"),
            (Err(_), Err(_)) => {}
            (Err(why), Ok(_)) if why.contains("(a map) has wire type") => {}
            (f, s) => panic!("wire-format path {:?}, DynamicMessage {:?}, for {value:?}", f.err(), s.err()),
        }
    }
});
