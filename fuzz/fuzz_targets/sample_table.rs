//! Fuzz target `sample_table`: see `dsrt_atlas_fuzz_targets::sample_table`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dsrt_atlas_fuzz_targets::quiet_caught_panics();
    dsrt_atlas_fuzz_targets::sample_table(data);
});
