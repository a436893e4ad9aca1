//! `ValueFormat::parse` for Avro values (plain or Confluent-framed) with a
//! fixed schema: see `checks/values.rs` for the input layout and invariants.
#![no_main]

mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    checks::values::check(checks::values::Kind::Avro, input);
});
