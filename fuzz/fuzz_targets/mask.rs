//! Fuzz target `mask`: see `fuzz_targets::mask`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::mask(data);
});
