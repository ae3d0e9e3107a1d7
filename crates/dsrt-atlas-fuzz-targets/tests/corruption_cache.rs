//! Corruption sweep of a small DatasetRT cache: every byte of manifest.json, index.bin and
//! metadata.arrow flipped (two ways) and truncated at every length, plus every shard byte of
//! the `v3` fixture and a sample of the `lz4` fixture's, each opened with and without
//! `validate_cache` and read whole. Each case ends in a typed error, or (only for shard bytes
//! read without validation) different payload bytes; never a panic, a case over 2 s, or one
//! allocation over 64 MiB.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code

mod common;

use common::{variant, Limiting, Outcome, Tally};
use dsrt_atlas_fixtures::cache_specs;
use dsrt_reader::{Cache, OpenOptions, Sample};
use std::path::{Path, PathBuf};

#[global_allocator]
static GLOBAL: Limiting = Limiting;

fn read_all(dir: &Path, validate_cache: bool) -> Result<Vec<Sample>, String> {
    let cache = Cache::open(dir, OpenOptions { validate_cache }).map_err(|e| variant(&e))?;
    (0..cache.len())
        .map(|i| cache.sample(i).map_err(|e| variant(&e)))
        .collect()
}

fn outcome(dir: &Path, validate: bool, original: &[Sample]) -> Outcome {
    match read_all(dir, validate) {
        Err(e) => Outcome::Error(e),
        Ok(samples) if samples == original => Outcome::Same,
        Ok(samples) => {
            let metadata_differs = samples.len() != original.len()
                || samples
                    .iter()
                    .zip(original)
                    .any(|(a, b)| a.metadata != b.metadata);
            Outcome::Different(
                if metadata_differs {
                    "metadata"
                } else {
                    "payload"
                }
                .into(),
            )
        }
    }
}

/// Removes, at any depth, every key `drop` selects.
fn strip(value: &mut serde_json::Value, drop: &dyn Fn(&str) -> bool) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !drop(k));
            map.values_mut().for_each(|v| strip(v, drop));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| strip(v, drop)),
        _ => {}
    }
}

/// Keys no file is checked against: a flip there changes what the manifest says, not what the
/// cache serves. The format gives the manifest no checksum of its own.
const UNCHECKED_KEYS: [&str; 3] = ["source", "cache_id", "ratio"];

/// Whether two manifests are equal JSON once the unchecked keys (and, with `checksums`, every
/// `*sha256` key) are left out; `false` if either is not JSON.
fn equal_where_checked(a: &[u8], b: &[u8], checksums: bool) -> bool {
    let parse = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok();
    let (Some(mut a), Some(mut b)) = (parse(a), parse(b)) else {
        return false;
    };
    let drop = |k: &str| UNCHECKED_KEYS.contains(&k) || (!checksums && k.ends_with("sha256"));
    strip(&mut a, &drop);
    strip(&mut b, &drop);
    a == b
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    original: Vec<Sample>,
}

fn fixture(index: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let spec = cache_specs()[index];
    let path = dir.path().join(spec.name);
    dsrt_atlas_fixtures::write_cache(&spec, &path).unwrap();
    let original = read_all(&path, true).unwrap();
    Fixture {
        _dir: dir,
        path,
        original,
    }
}

/// Writes `bytes` over `file`, runs one case per validate mode, restores the file.
fn sweep_case(
    tally: &mut Tally,
    fx: &Fixture,
    file: &str,
    bytes: &[u8],
    region: &str,
    what: &str,
    allowed: &dyn Fn(bool, &Outcome) -> bool,
) {
    let target = fx.path.join(file);
    let pristine = std::fs::read(&target).unwrap();
    std::fs::write(&target, bytes).unwrap();
    for validate in [false, true] {
        let region = format!("{region} validate={validate}");
        let (path, original) = (&fx.path, &fx.original);
        tally.case(
            &region,
            what,
            |o| allowed(validate, o),
            || outcome(path, validate, original),
        );
    }
    std::fs::write(&target, pristine).unwrap();
}

#[test]
fn metadata_files_flipped_and_truncated() {
    common::quiet_caught_arrow_panics();
    let fx = fixture(1); // the `v3` fixture: 7 samples, 2 shards, no compression
    let mut tally = Tally::default();
    let mut unchecked = 0u64;
    for file in ["manifest.json", "index.bin", "metadata.arrow"] {
        let pristine = std::fs::read(fx.path.join(file)).unwrap();
        for at in 0..pristine.len() {
            for mask in [0x01u8, 0xff] {
                let mut bytes = pristine.clone();
                bytes[at] ^= mask;
                // A flip may go unnoticed only in the manifest, only in a key no file is
                // checked against (and, without validate_cache, in a checksum).
                let benign = |validate: bool| {
                    file == "manifest.json" && equal_where_checked(&pristine, &bytes, validate)
                };
                if file == "manifest.json" && benign(true) {
                    unchecked += 1;
                }
                // Without validate_cache, a record length in index.bin is the only authority
                // on where a payload ends (the pinned spec: "the index is the authority for
                // locating each record"; records need not tile a shard), so a flipped length
                // can move the payload's end undetected. Metadata never changes: the envelope
                // is still checked against metadata.arrow.
                let allowed = |validate: bool, o: &Outcome| match o {
                    Outcome::Error(_) => true,
                    // Unvalidated, bytes no reader consults (Arrow padding, the leading
                    // magic's padding, the duplicate schema message) may change unnoticed: the
                    // data served is still right. Validated, every byte is bound by SHA-256.
                    Outcome::Same => benign(validate) || (!validate && file != "manifest.json"),
                    Outcome::Different(what) => {
                        !validate && file == "index.bin" && what == "payload"
                    }
                };
                let what = format!("byte {at} ^ {mask:#04x}");
                sweep_case(
                    &mut tally,
                    &fx,
                    file,
                    &bytes,
                    &format!("{file} flip"),
                    &what,
                    &allowed,
                );
            }
        }
        for len in 0..pristine.len() {
            // Only cutting the manifest's trailing newline leaves the same JSON.
            let same_json =
                file == "manifest.json" && equal_where_checked(&pristine, &pristine[..len], true);
            let allowed = |_: bool, o: &Outcome| match o {
                Outcome::Error(_) => true,
                Outcome::Same => same_json,
                Outcome::Different(_) => false,
            };
            let what = format!("truncated to {len}");
            let region = format!("{file} truncate");
            sweep_case(
                &mut tally,
                &fx,
                file,
                &pristine[..len],
                &region,
                &what,
                &allowed,
            );
        }
    }
    tally.print("cache metadata sweep");
    println!("  manifest flips that changed only unchecked keys {UNCHECKED_KEYS:?}: {unchecked}");
    assert!(tally.cases > 10_000, "{} cases", tally.cases);
}

#[test]
fn shard_bytes_flipped_and_truncated() {
    let mut tally = Tally::default();
    for (fixture_index, step) in [(1usize, 1usize), (2, 5)] {
        let fx = fixture(fixture_index);
        let name = cache_specs()[fixture_index].name;
        let shards = fx.path.join("shards");
        let mut files: Vec<String> = std::fs::read_dir(&shards)
            .unwrap()
            .map(|e| format!("shards/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        files.sort();
        for file in files {
            let pristine = std::fs::read(fx.path.join(&file)).unwrap();
            // Shard bytes: validated, always an error; unvalidated, an error or other payload
            // bytes (never other metadata: the embedded copy is checked against metadata.arrow),
            // or, for lz4 only, the same bytes: two LZ4 blocks can decode to one output.
            let lz4 = name == "lz4";
            let allowed = move |validate: bool, o: &Outcome| match o {
                Outcome::Error(_) => true,
                Outcome::Different(what) => !validate && what == "payload",
                Outcome::Same => !validate && lz4,
            };
            for at in (0..pristine.len()).step_by(step) {
                let mut bytes = pristine.clone();
                bytes[at] ^= 0x01;
                let what = format!("byte {at} ^ 0x01");
                let region = format!("{name} shard flip");
                sweep_case(&mut tally, &fx, &file, &bytes, &region, &what, &allowed);
            }
            let only_errors = |_: bool, o: &Outcome| matches!(o, Outcome::Error(_));
            for len in (0..pristine.len()).step_by(7) {
                let what = format!("truncated to {len}");
                let region = format!("{name} shard truncate");
                sweep_case(
                    &mut tally,
                    &fx,
                    &file,
                    &pristine[..len],
                    &region,
                    &what,
                    &only_errors,
                );
            }
        }
    }
    tally.print("cache shard sweep");
    assert!(tally.cases > 2_000, "{} cases", tally.cases);
}
