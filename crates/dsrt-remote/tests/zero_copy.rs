//! A `Loader` over a remote cache hands out uncompressed payloads as slices of the mapped,
//! checked local copy of their shard (no copy); compressed ones are decoded into its chunk
//! buffers. Either way the bytes are exact, and closing the dataset leaves every shard
//! published.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: known small values.

use dsrt_dataset::{Dataset, Loader, LoaderConfig};
use dsrt_manifest::CompressionAlgo;
use dsrt_remote::object_store::local::LocalFileSystem;
use dsrt_remote::object_store::path::Path as StorePath;
use dsrt_remote::{open_remote, RemoteOptions, RemotePrefix};
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use write_support::local_names;

mod write_support;

fn payload(i: u64) -> Vec<u8> {
    (0..300 + (i * 13) % 700)
        .map(|b| ((b * 7) ^ i) as u8)
        .collect()
}

fn write_cache(root: &Path, algo: CompressionAlgo) {
    let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new("z", schema)
        .compression(algo)
        .max_shard_bytes(8192);
    let mut writer = CacheWriter::create(root.join("z"), options).unwrap();
    for i in 0..200u64 {
        writer
            .add(&payload(i), &Row::new().with("label", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
}

/// The file mapped at `address` in this process, from /proc/self/maps (`None`: anonymous
/// memory, such as a heap buffer).
fn mapped_file_at(address: usize) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        if !(start..end).contains(&address) {
            return None;
        }
        let path = fields.nth(4)?;
        path.starts_with('/').then(|| PathBuf::from(path))
    })
}

#[test]
fn uncompressed_payloads_are_slices_of_the_mapped_shards_and_compressed_ones_are_decoded() {
    // By default the first records are read by range requests into the chunk buffer (at most
    // 8); with `read_while_downloading` off every record comes from a checked shard.
    for (algo, early, most_unmapped) in [
        (CompressionAlgo::None, true, 8),
        (CompressionAlgo::None, false, 0),
        (CompressionAlgo::Lz4, true, 0),
    ] {
        let (store, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        write_cache(store.path(), algo);
        let remote = RemotePrefix::new(
            Arc::new(LocalFileSystem::new_with_prefix(store.path()).unwrap()),
            StorePath::from("z"),
            "test://z",
        );
        let options = RemoteOptions::new(local.path()).read_while_downloading(early);
        let cache = open_remote(&remote, &options).unwrap();
        let dataset = Arc::new(Dataset::from_caches(vec![(PathBuf::from("z"), cache)]).unwrap());
        let config = LoaderConfig {
            workers: 2,
            prefetch: 16,
            ..LoaderConfig::default()
        };
        let samples: Vec<_> = Loader::new(Arc::clone(&dataset), config)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(samples.len(), 200);
        let local_root = local.path().canonicalize().unwrap();
        let mut unmapped = 0;
        for sample in &samples {
            let i = sample.key.sample_id;
            assert_eq!(&sample.payload[..], &payload(i)[..], "{algo:?} sample {i}");
            let file = mapped_file_at(sample.payload.as_ptr() as usize);
            match (algo, file) {
                (CompressionAlgo::None, Some(file)) => {
                    assert!(file.starts_with(&local_root), "{file:?}");
                    assert!(file.to_string_lossy().contains("/shards/"), "{file:?}");
                }
                (CompressionAlgo::None, None) => unmapped += 1,
                (_, file) => assert_eq!(file, None, "a decoded sample {i} lies in a file mapping"),
            }
        }
        assert!(
            unmapped <= most_unmapped,
            "{algo:?}, early reads {early}: {unmapped} samples not in a mapping"
        );
        drop(samples);
        drop(dataset);
        let files: Vec<String> = local_names(local.path());
        assert!(
            !files.iter().any(|f| f.contains(".shard-cache-partial.")),
            "{files:?}"
        );
        let published = files
            .iter()
            .filter(|f| f.rsplit('/').nth(1) == Some("shards"))
            .count();
        assert_eq!(
            published,
            std::fs::read_dir(store.path().join("z/shards"))
                .unwrap()
                .count()
        );
    }
}
