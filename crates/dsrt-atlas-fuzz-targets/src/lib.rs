//! Fuzz targets for every parser of both formats, as plain functions.
//!
//! What it is for: each `pub fn` here takes arbitrary bytes, feeds them to one parser (or to a
//! whole open-and-read path) and must return without panicking, hanging or allocating by an
//! untrusted length. The cargo-fuzz project in `fuzz/` calls these functions from its
//! `fuzz_targets/*.rs`; `tests/replay.rs` replays every corpus file through them, so CI checks
//! the corpus without a fuzzer. [`TARGETS`] lists them; [`seeds`] derives seed inputs from the
//! golden fixtures.
//!
//! What it is not for: production code. Nothing in the library stack depends on it.
//!
//! Layering: a test-support crate above both facades and the `fixtures` crate.
#![forbid(unsafe_code)]
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

mod atlas_targets;
mod dsrt_targets;
mod seed;

pub use atlas_targets::{bounded_selection, collection, footer, mask, trailer};
pub use dsrt_targets::{cache, cache_files, index, manifest, metadata, sample_table, shard_record};
pub use seed::{seeds, Seed};

/// A fuzz target: arbitrary bytes in, nothing out, never a panic.
pub type Target = fn(&[u8]);

/// Every target by name; the names are the `fuzz/fuzz_targets/*.rs` file stems and the
/// `fuzz/corpus/*` directory names.
pub const TARGETS: [(&str, Target); 10] = [
    ("manifest", manifest),
    ("index", index),
    ("shard_record", shard_record),
    ("metadata", metadata),
    ("sample_table", sample_table),
    ("footer", footer),
    ("trailer", trailer),
    ("mask", mask),
    ("cache", cache),
    ("collection", collection),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Largest number of rows, samples or elements a target visits, so that a valid input
/// declaring millions of them (a legitimate large file) stays fast under the fuzzer.
pub(crate) const MAX_VISITS: u64 = 4096;

/// Replaces libFuzzer's aborting panic hook with one that only prints, once per process.
///
/// `dsrt-metadata` turns a panic inside arrow's IPC decoder (metadata.arrow, sample tables)
/// into a typed error with
/// `catch_unwind`; libfuzzer-sys's hook would abort on that already-handled panic. A panic that
/// escapes a target still reaches libfuzzer-sys's own `catch_unwind`, which aborts: a crash.
pub fn quiet_caught_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}"))));
}
