//! The tiered-storage reader: segment manifests (JSON fields, `fixed` and
//! `variable` chunk indexes, packed sizes), chunks undone through the
//! transform whole and by range, and `.indexes` slices. See
//! `checks/tiered.rs` for the input layout and invariants; the largest
//! allocation is counted by the global allocator installed here.
#![no_main]

mod checks;

#[global_allocator]
static ALLOCATOR: checks::tiered::Counting = checks::tiered::Counting;

libfuzzer_sys::fuzz_target!(|input: &[u8]| checks::tiered::check(input));
