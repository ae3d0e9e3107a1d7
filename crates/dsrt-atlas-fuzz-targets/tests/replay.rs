//! Replays every file of `fuzz/corpus/<target>/` (and every saved crash in
//! `fuzz/artifacts/<target>/`) through the same target functions the fuzzer calls, so CI checks
//! the corpus without a fuzzer; and checks that the corpus holds the current fixture seeds.
#![allow(clippy::unwrap_used)] // test code

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "log"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_corpus_file_replays_without_a_panic() {
    let mut total = 0;
    for (name, target) in dsrt_atlas_fuzz_targets::TARGETS {
        let mut count = 0;
        for sub in ["corpus", "artifacts"] {
            for file in files(&fuzz_dir().join(sub).join(name)) {
                let bytes = std::fs::read(&file).unwrap();
                let outcome = std::panic::catch_unwind(|| target(&bytes));
                assert!(outcome.is_ok(), "{name}: {} panicked", file.display());
                count += 1;
            }
        }
        println!("{name}: {count} inputs replayed");
        assert!(
            count > 0,
            "{name} has an empty corpus; run cargo xtask fuzz-seed"
        );
        total += count;
    }
    println!("{total} inputs replayed in all");
}

#[test]
fn the_corpus_holds_the_current_fixture_seeds() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let seeds = dsrt_atlas_fuzz_targets::seeds(&fixtures).unwrap();
    assert!(seeds.len() >= 40, "{} seeds", seeds.len());
    for seed in seeds {
        let path = fuzz_dir()
            .join("corpus")
            .join(seed.target)
            .join(format!("seed-{}", seed.name));
        let stored = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run cargo xtask fuzz-seed", path.display()));
        assert!(
            stored == seed.bytes,
            "{} is stale; run cargo xtask fuzz-seed",
            path.display()
        );
    }
}

#[test]
fn every_target_survives_trivial_inputs() {
    for (name, target) in dsrt_atlas_fuzz_targets::TARGETS {
        for input in [&b""[..], &[0], &[0xff], &[1; 64], &[0xff; 300]] {
            let outcome = std::panic::catch_unwind(|| target(input));
            assert!(outcome.is_ok(), "{name} panicked on {input:?}");
        }
    }
}
