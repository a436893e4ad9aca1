//! Typed JSON values: the schema-driven path against arrow-json's on a
//! schema and documents taken from the input (see `checks::json_values`):
//! no panics, deep nesting included; the same rows for every document that
//! is JSON; a null row for text that is not.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|input: &[u8]| checks::json_values::check(input));
