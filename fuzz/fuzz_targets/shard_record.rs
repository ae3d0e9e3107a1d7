//! Fuzz target `shard_record`: see `fuzz_targets::shard_record`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_targets::quiet_caught_panics();
    fuzz_targets::shard_record(data);
});
