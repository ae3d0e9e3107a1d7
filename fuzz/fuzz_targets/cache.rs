//! Fuzz target `cache`: see `fuzz_targets::cache`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::cache(data);
});
