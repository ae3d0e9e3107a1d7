//! Fuzz target `trailer`: see `fuzz_targets::trailer`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::trailer(data);
});
