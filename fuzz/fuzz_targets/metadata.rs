//! Fuzz target `metadata`: see `dsrt_atlas_fuzz_targets::metadata`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dsrt_atlas_fuzz_targets::quiet_caught_panics();
    dsrt_atlas_fuzz_targets::metadata(data);
});
