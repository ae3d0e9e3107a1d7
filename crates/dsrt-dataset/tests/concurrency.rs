//! Sharing: one `Dataset` behind an `Arc`, four ranks each iterating it at the same time with
//! their own prefetching `Loader`, and 4 more threads reading samples directly. Each rank gets
//! exactly the sequence it gets when it runs alone, and together the ranks cover the epoch.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_dataset::{
    Dataset, DatasetError, LoadedSample, Loader, LoaderConfig, SampleKey, SampleTable,
};
use dsrt_plan::{PlanConfig, RemainderPolicy, Shuffle};
use dsrt_reader::OpenOptions;
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// What a training job shares between threads, or moves into one.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Dataset>();
    shared::<SampleTable>();
    shared::<DatasetError>();
    shared::<LoadedSample>();
    const fn movable<T: Send>() {}
    movable::<Loader>();
};

const WORLD: u64 = 4;

fn dataset(root: &Path) -> Arc<Dataset> {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let mut paths = Vec::new();
    for (name, count) in [("a", 301i64), ("b", 157), ("c", 230)] {
        let path = root.join(name);
        let options = WriterOptions::new(name, schema.clone()).max_shard_bytes(2000);
        let mut writer = CacheWriter::create(&path, options).unwrap();
        for i in 0..count {
            let payload = format!("{name}{i}").repeat(1 + (i as usize % 9));
            writer
                .add(payload.as_bytes(), &Row::new().with("n", i))
                .unwrap();
        }
        writer.finish().unwrap();
        paths.push(path);
    }
    Arc::new(Dataset::open(&paths, OpenOptions::validated()).unwrap())
}

fn config(rank: u64) -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 7,
            weights: Some(vec![2.0, 1.0, 1.0]),
            shuffle: Shuffle::Local { window_shards: 3 },
            ..PlanConfig::default()
        },
        epoch: 3,
        rank,
        world_size: WORLD,
        policy: RemainderPolicy::Pad,
        workers: 2,
        prefetch: 64,
        ..LoaderConfig::default()
    }
}

fn run(dataset: &Arc<Dataset>, rank: u64) -> Vec<LoadedSample> {
    Loader::new(Arc::clone(dataset), config(rank))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn four_ranks_iterate_one_dataset_at_once() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let alone: Vec<Vec<LoadedSample>> = (0..WORLD).map(|rank| run(&dataset, rank)).collect();

    let together: Vec<Vec<LoadedSample>> = std::thread::scope(|scope| {
        let ranks: Vec<_> = (0..WORLD)
            .map(|rank| {
                scope.spawn({
                    let dataset = Arc::clone(&dataset);
                    move || run(&dataset, rank)
                })
            })
            .collect();
        // Meanwhile, direct reads of every sample from four more threads.
        for t in 0..4u64 {
            let dataset = Arc::clone(&dataset);
            scope.spawn(move || {
                for cache in dataset.caches() {
                    let len = cache.cache.len();
                    for i in (t..len).step_by(4) {
                        let sample = dataset.sample(cache.cache_id, i).unwrap();
                        assert_eq!(sample.sample, i);
                    }
                }
            });
        }
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        together, alone,
        "a rank's sequence changed when ranks ran together"
    );

    let lengths: BTreeSet<usize> = together.iter().map(Vec::len).collect();
    assert_eq!(lengths.len(), 1, "ranks got unequal lengths {lengths:?}");
    let mut positions = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for sample in together.iter().flatten().filter(|s| !s.padding) {
        assert!(
            positions.insert(sample.global_position),
            "position served twice"
        );
        let key: SampleKey = sample.key;
        keys.insert((key.cache_id, key.sample_id));
        let expected = dataset.sample(key.cache_id, key.sample_id).unwrap();
        assert_eq!(&sample.payload[..], &expected.payload[..]);
    }
    let epoch_len = Loader::new(Arc::clone(&dataset), config(0))
        .unwrap()
        .epoch_len();
    assert_eq!(positions.len() as u64, epoch_len);
    assert_eq!(positions.last().copied(), Some(epoch_len - 1));
}
