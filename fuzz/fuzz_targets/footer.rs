//! Fuzz target `footer`: see `fuzz_targets::footer`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::footer(data);
});
