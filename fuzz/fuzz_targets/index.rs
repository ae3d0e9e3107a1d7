//! Fuzz target `index`: see `fuzz_targets::index`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::index(data);
});
