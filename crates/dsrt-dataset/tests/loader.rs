//! Loading epochs from real caches: order independent of workers, resume at any step with any
//! workers, equal rank lengths covering the epoch.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_dataset::{Dataset, LoadedSample, Loader, LoaderConfig, RankPlan};
use dsrt_plan::{IterState, PlanConfig, RemainderPolicy, Shuffle, Topology};
use dsrt_reader::OpenOptions;
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::Path;
use std::sync::Arc;

fn dataset(root: &Path) -> Arc<Dataset> {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let mut paths = Vec::new();
    for (name, count) in [("a", 57i64), ("b", 23), ("c", 40)] {
        let path = root.join(name);
        let mut writer = CacheWriter::create(
            &path,
            WriterOptions::new(name, schema.clone()).max_shard_bytes(300),
        )
        .unwrap();
        for i in 0..count {
            writer
                .add(format!("{name}{i}").as_bytes(), &Row::new().with("n", i))
                .unwrap();
        }
        writer.finish().unwrap();
        paths.push(path);
    }
    Arc::new(Dataset::open(&paths, OpenOptions::default()).unwrap())
}

fn config(workers: usize) -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 42,
            weights: Some(vec![1.0, 2.0, 1.0]),
            samples_per_epoch: Some(150),
            shuffle: Shuffle::Local { window_shards: 2 },
            ..PlanConfig::default()
        },
        epoch: 1,
        world_size: 1,
        workers,
        prefetch: 4,
        ..LoaderConfig::default()
    }
}

fn payloads(loader: Loader) -> Vec<Vec<u8>> {
    loader.map(|s| s.unwrap().payload.to_vec()).collect()
}

#[test]
fn the_order_does_not_depend_on_the_number_of_workers() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let reference = payloads(Loader::new(Arc::clone(&dataset), config(0)).unwrap());
    assert_eq!(reference.len(), 150);
    for workers in [1, 2, 3, 7] {
        assert_eq!(
            payloads(Loader::new(Arc::clone(&dataset), config(workers)).unwrap()),
            reference,
            "{workers} workers"
        );
    }
}

#[test]
fn resume_continues_exactly_at_the_next_sample_with_any_workers() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let reference = payloads(Loader::new(Arc::clone(&dataset), config(2)).unwrap());
    for (stop, workers_after) in [(0, 0), (1, 3), (17, 1), (74, 4), (149, 2), (150, 1)] {
        let mut loader = Loader::new(Arc::clone(&dataset), config(2)).unwrap();
        for _ in 0..stop {
            loader.next().unwrap().unwrap();
        }
        let saved = serde_json::to_string(&loader.state()).unwrap();
        drop(loader);
        let state: IterState = serde_json::from_str(&saved).unwrap();
        let resumed = Loader::new(
            Arc::clone(&dataset),
            LoaderConfig {
                resume: Some(state),
                ..config(workers_after)
            },
        )
        .unwrap();
        assert_eq!(
            payloads(resumed),
            reference[stop..].to_vec(),
            "stop at {stop}"
        );
    }
}

#[test]
fn a_state_from_another_plan_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let state = IterState {
        seed: 7,
        epoch: 1,
        position: 3,
        epoch_len: 150,
        cuts: Vec::new(),
        remaining: None,
        mixture: None,
        continuation: None,
    };
    let err = Loader::new(
        dataset,
        LoaderConfig {
            resume: Some(state),
            ..config(0)
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("seed 7"), "{err}");
}

fn rank_samples(
    dataset: &Arc<Dataset>,
    world_size: u64,
    policy: RemainderPolicy,
) -> Vec<Vec<LoadedSample>> {
    (0..world_size)
        .map(|rank| {
            let config = LoaderConfig {
                rank,
                world_size,
                policy,
                ..config(1)
            };
            let loader = Loader::new(Arc::clone(dataset), config).unwrap();
            let expected = loader.len();
            let samples: Vec<LoadedSample> = loader.map(Result::unwrap).collect();
            assert_eq!(samples.len() as u64, expected);
            samples
        })
        .collect()
}

#[test]
fn ranks_get_equal_disjoint_shares_that_cover_the_epoch() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    for world_size in [1, 2, 4, 7, 149, 151, 400] {
        for policy in [RemainderPolicy::Pad, RemainderPolicy::Drop] {
            let ranks = rank_samples(&dataset, world_size, policy);
            let count = ranks[0].len();
            assert!(
                ranks.iter().all(|r| r.len() == count),
                "{world_size} {policy:?}"
            );
            let mut positions: Vec<u64> = ranks
                .iter()
                .flatten()
                .filter(|s| !s.padding)
                .map(|s| s.global_position)
                .collect();
            positions.sort_unstable();
            let distinct = positions.len();
            positions.dedup();
            assert_eq!(positions.len(), distinct, "no repeat outside padding");
            match policy {
                RemainderPolicy::Pad => assert_eq!(positions, (0..150).collect::<Vec<_>>()),
                RemainderPolicy::Drop => assert_eq!(positions.len() as u64, 150 - 150 % world_size),
            }
        }
    }
}

#[test]
fn each_loaded_sample_carries_its_payload_and_finds_its_metadata() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    for sample in Loader::new(Arc::clone(&dataset), config(2)).unwrap() {
        let sample = sample.unwrap();
        let text = String::from_utf8(sample.payload.to_vec()).unwrap();
        let n: i64 = text[1..].parse().unwrap();
        let row = sample.metadata(&dataset).unwrap();
        assert_eq!(row.get(0), Some(dsrt_schema::ValueRef::Int64(n)), "{text}");
        assert_eq!(
            dataset
                .sample(sample.key.cache_id, sample.key.sample_id)
                .unwrap()
                .payload,
            sample.payload.to_vec()
        );
    }
}

#[test]
fn payloads_held_while_later_epochs_reuse_chunk_buffers_stay_intact() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    // Epoch 1's samples are all kept alive; epochs 2 and 3 run in full meanwhile, recycling
    // every buffer they can. A buffer still referenced must never be handed out again.
    let held: Vec<LoadedSample> = Loader::new(Arc::clone(&dataset), config(2))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for epoch in [2, 3] {
        let loader =
            Loader::new(Arc::clone(&dataset), LoaderConfig { epoch, ..config(2) }).unwrap();
        for sample in loader {
            let sample = sample.unwrap();
            let expected = dataset
                .sample(sample.key.cache_id, sample.key.sample_id)
                .unwrap();
            assert_eq!(&sample.payload[..], &expected.payload[..]);
        }
    }
    for sample in &held {
        let expected = dataset
            .sample(sample.key.cache_id, sample.key.sample_id)
            .unwrap();
        assert_eq!(
            &sample.payload[..],
            &expected.payload[..],
            "{:?}",
            sample.key
        );
    }
}

#[test]
fn a_rank_plan_read_in_any_order_of_chunks_gives_the_loaders_samples() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let world = 3;
    let loaded = rank_samples(&dataset, world, RemainderPolicy::Pad);
    let base = config(0);
    for (rank, samples) in loaded.iter().enumerate() {
        let plan = RankPlan::new(
            Arc::clone(&dataset),
            &base.plan,
            base.epoch,
            rank as u64,
            Topology::ranks(world).unwrap(),
            RemainderPolicy::Pad,
            None,
        )
        .unwrap();
        assert_eq!(plan.len(), samples.len() as u64);
        // Chunks of 7 steps, read last chunk first: each step reads the loader's sample.
        let steps: Vec<u64> = (0..plan.len()).collect();
        for chunk in steps.chunks(7).rev() {
            let keys = plan.keys(chunk).unwrap();
            for (&step, key) in chunk.iter().zip(&keys) {
                assert_eq!(*key, samples[step as usize].key, "rank {rank} step {step}");
            }
            let batch = plan.read_columnar(chunk).unwrap();
            assert_eq!(batch.num_rows(), chunk.len());
        }
        let stats = plan.stats();
        assert_eq!(stats.samples, plan.len());
        let past = plan.keys(&[plan.len()]).unwrap_err();
        assert_eq!(past.kind(), "step_index");
        assert_eq!(
            past.to_string(),
            format!(
                "step {0} out of range for a rank share of {0} steps",
                plan.len()
            )
        );
        // Halfway: the state resumes, on one rank, exactly the steps not yet read by all.
        let half = plan.len() / 2;
        let state = plan.state_after(half);
        let resumed = RankPlan::new(
            Arc::clone(&dataset),
            &base.plan,
            base.epoch,
            0,
            Topology::ranks(1).unwrap(),
            RemainderPolicy::Pad,
            Some(&state),
        )
        .unwrap();
        assert_eq!(resumed.epoch_len(), plan.epoch_len());
        assert!(resumed.len() <= plan.epoch_len() - half * world);
    }
}
