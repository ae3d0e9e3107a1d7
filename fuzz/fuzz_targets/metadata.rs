//! Fuzz target `metadata`: see `fuzz_targets::metadata`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::metadata(data);
});
