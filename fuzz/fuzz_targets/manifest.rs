//! Fuzz target `manifest`: see `fuzz_targets::manifest`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::manifest(data);
});
