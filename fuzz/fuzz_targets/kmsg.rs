//! Kafka's internal-topic records through the definition-driven decoder:
//! see `checks/kmsg.rs` for the input layout and invariants.
#![no_main]

mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    checks::kmsg::check(input);
});
