//! Fuzz target `collection`: see `fuzz_targets::collection`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::collection(data);
});
