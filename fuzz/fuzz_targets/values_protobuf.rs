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

const SCHEMA: &str = r#"
    syntax = "proto3";
    package fz;
    import "google/protobuf/timestamp.proto";
    import "google/protobuf/duration.proto";
    import "google/protobuf/wrappers.proto";
    enum Color { RED = 0; GREEN = 1; BLUE = 5; }
    message Inner { string s = 1; int32 i = 2; repeated sint64 r = 3; Inner next = 4; }
    message All {
        int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
        fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10; float fl = 11;
        double db = 12; bool b = 13; string s = 14; bytes by = 15; Color c = 16;
        repeated int32 ri32 = 17; repeated sint64 rs64 = 18; repeated fixed32 rf32 = 19;
        repeated double rdb = 20; repeated bool rb = 21; repeated Color rc = 22;
        repeated string rs = 23; repeated bytes rby = 24;
        Inner inner = 25; repeated Inner inners = 26;
        map<string, int32> m1 = 27; map<int64, Inner> m2 = 28; map<bool, Color> m3 = 29;
        map<uint32, string> m4 = 30; map<sint32, google.protobuf.Timestamp> m5 = 31;
        optional int32 oi = 32; optional string os = 33;
        oneof pick { string p_s = 34; Inner p_m = 35; int64 p_i = 36; }
        google.protobuf.Timestamp ts = 37; google.protobuf.Duration du = 38;
        google.protobuf.Int32Value w_i = 39; google.protobuf.StringValue w_s = 40;
        google.protobuf.BoolValue w_b = 41; All rec = 42; uint64 far = 300;
    }
"#;

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
