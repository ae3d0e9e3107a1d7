//! A loader's state records what its epoch was planned with, the caches' ids included. A
//! loader over another mixture follows it from the state's position (other weights, a cache
//! replaced by another, caches in another order), reporting the change through its plan,
//! and refuses what it cannot honour naming it. A state saved before the mixture was recorded
//! resumes exactly as before.
#![allow(clippy::unwrap_used)] // test code

use dsrt_dataset::{Dataset, DatasetError, Loader, LoaderConfig, SampleKey};
use dsrt_plan::{IterState, PlanConfig, PlanError, Shuffle};
use dsrt_reader::OpenOptions;
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Writes cache `name` (source `name`) of `count` samples `{name}{i}`, a few per shard.
fn write(root: &Path, name: &str, count: i64) -> PathBuf {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let path = root.join(name);
    let mut writer =
        CacheWriter::create(&path, WriterOptions::new(name, schema).max_shard_bytes(300)).unwrap();
    for i in 0..count {
        writer
            .add(format!("{name}{i}").as_bytes(), &Row::new().with("n", i))
            .unwrap();
    }
    writer.finish().unwrap();
    path
}

fn open(paths: &[&PathBuf]) -> Arc<Dataset> {
    Arc::new(Dataset::open(paths, OpenOptions::default()).unwrap())
}

fn config(weights: &[f64]) -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 11,
            weights: Some(weights.to_vec()),
            samples_per_epoch: Some(80),
            shuffle: Shuffle::Local { window_shards: 2 },
            ..PlanConfig::default()
        },
        world_size: 1,
        workers: 1,
        prefetch: 4,
        ..LoaderConfig::default()
    }
}

/// The state after `steps` samples, round-tripped through JSON as a checkpoint stores it.
fn saved(dataset: &Arc<Dataset>, config: LoaderConfig, steps: usize) -> IterState {
    let mut loader = Loader::new(Arc::clone(dataset), config).unwrap();
    for _ in 0..steps {
        loader.next().unwrap().unwrap();
    }
    serde_json::from_str(&serde_json::to_string(&loader.state()).unwrap()).unwrap()
}

fn keys(loader: Loader) -> Vec<SampleKey> {
    loader.map(|s| s.unwrap().key).collect()
}

/// The refusal of `state` by a loader over `dataset` with `config`, as text.
fn refusal(dataset: &Arc<Dataset>, config: LoaderConfig, state: IterState) -> String {
    let resume = LoaderConfig {
        resume: Some(state),
        ..config
    };
    match Loader::new(Arc::clone(dataset), resume) {
        Err(error @ DatasetError::Plan(PlanError::State(_))) => error.to_string(),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(loader) => panic!(
            "a state of another mixture was accepted ({} samples left)",
            loader.len()
        ),
    }
}

fn id(dataset: &Dataset, position: usize) -> u64 {
    dataset.caches()[position].cache_id
}

fn resumed(dataset: &Arc<Dataset>, config: LoaderConfig, state: IterState) -> Loader {
    Loader::new(
        Arc::clone(dataset),
        LoaderConfig {
            resume: Some(state),
            ..config
        },
    )
    .unwrap()
}

#[test]
fn other_weights_of_the_same_epoch_length_are_followed_from_the_state() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (write(root.path(), "a", 57), write(root.path(), "b", 23));
    let dataset = open(&[&a, &b]);
    let state = saved(&dataset, config(&[0.5, 0.5]), 30);
    let loader = resumed(&dataset, config(&[0.8, 0.2]), state);
    let change = loader.plan().mixture_change().unwrap();
    assert!(change.weights && change.added.is_empty() && change.removed.is_empty());
    assert_eq!(change.position, 30);
    // The new weights govern the 50 positions left: cache `a` draws its 80% share of the
    // whole epoch less what the new plan places before position 30.
    let from = loader.plan().stream_positions_at(30);
    let expected_a = loader.plan().shares()[0] - from[0];
    let tail = keys(loader);
    assert_eq!(tail.len(), 50);
    let read_a = tail
        .iter()
        .filter(|k| k.cache_id == id(&dataset, 0))
        .count() as u64;
    assert_eq!(read_a, expected_a);
    // Another seed is still refused, naming it.
    let text = refusal(
        &dataset,
        LoaderConfig {
            plan: PlanConfig {
                seed: 12,
                ..config(&[0.8, 0.2]).plan
            },
            ..config(&[0.8, 0.2])
        },
        saved(&dataset, config(&[0.5, 0.5]), 30),
    );
    assert!(text.contains("seed 11 (the plan's is 12)"), "{text}");
}

#[test]
fn a_cache_replaced_by_another_of_the_same_length_is_removed_and_the_other_added() {
    let root = tempfile::tempdir().unwrap();
    // `x` and `y` hold payloads of the same sizes: the same length, the same shard runs.
    let (a, x, y) = (
        write(root.path(), "a", 57),
        write(root.path(), "x", 23),
        write(root.path(), "y", 23),
    );
    let before = open(&[&a, &x]);
    let after = open(&[&a, &y]);
    assert_eq!(before.shapes()[1].runs, after.shapes()[1].runs);
    let mut head_loader = Loader::new(Arc::clone(&before), config(&[1.0, 1.0])).unwrap();
    let head: Vec<SampleKey> = head_loader
        .by_ref()
        .take(30)
        .map(|s| s.unwrap().key)
        .collect();
    let state = head_loader.state();
    let x_read = head.iter().filter(|k| k.cache_id == id(&before, 1)).count() as u64;
    let loader = resumed(&after, config(&[1.0, 1.0]), state.clone());
    let change = loader.plan().mixture_change().unwrap().clone();
    assert_eq!(change.added, [1]);
    assert_eq!(change.removed.len(), 1);
    assert_eq!(change.removed[0].cache_id, Some(id(&before, 1)));
    assert_eq!(change.removed[0].consumed, x_read);
    let tail = keys(loader);
    assert!(tail.iter().all(|k| k.cache_id != id(&before, 1)));
    assert!(tail.iter().any(|k| k.cache_id == id(&after, 1)));

    // The same caches, the same mixture: no change, and the rest of the epoch follows.
    let whole = keys(Loader::new(Arc::clone(&before), config(&[1.0, 1.0])).unwrap());
    let same = resumed(&before, config(&[1.0, 1.0]), state);
    assert!(same.plan().mixture_change().is_none());
    assert_eq!(keys(same), whole[30..]);
}

#[test]
fn caches_in_another_order_are_followed_by_id_serving_nothing_twice() {
    let root = tempfile::tempdir().unwrap();
    let (x, y) = (write(root.path(), "x", 23), write(root.path(), "y", 23));
    let before = open(&[&x, &y]);
    let after = open(&[&y, &x]);
    let within_a_pass = |weights: &[f64]| LoaderConfig {
        plan: PlanConfig {
            samples_per_epoch: Some(40),
            ..config(weights).plan
        },
        workers: 2,
        ..config(weights)
    };
    let mut first = Loader::new(Arc::clone(&before), within_a_pass(&[1.0, 1.0])).unwrap();
    let head: Vec<SampleKey> = first.by_ref().take(9).map(|s| s.unwrap().key).collect();
    let state = first.state();
    let loader = resumed(&after, within_a_pass(&[1.0, 1.0]), state);
    let change = loader.plan().mixture_change().unwrap();
    assert!(change.added.is_empty() && change.removed.is_empty());
    let mut all: Vec<SampleKey> = head.into_iter().chain(keys(loader)).collect();
    assert_eq!(all.len(), 40);
    all.sort_unstable_by_key(|k| (k.cache_id, k.sample_id));
    all.dedup();
    assert_eq!(all.len(), 40, "a sample was served twice");
}

#[test]
fn the_state_records_the_caches_ids_and_a_state_of_before_resumes_exactly() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (write(root.path(), "a", 57), write(root.path(), "b", 23));
    let dataset = open(&[&a, &b]);
    let state = saved(&dataset, config(&[0.5, 0.5]), 30);
    let json = serde_json::to_value(&state).unwrap();
    let recorded: Vec<u64> = json["mixture"]["caches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cache_id"].as_u64().unwrap())
        .collect();
    assert_eq!(recorded, [id(&dataset, 0), id(&dataset, 1)]);
    assert_eq!(json["mixture"]["shares"], serde_json::json!([40, 40]));

    // The same state as saved before the mixture existed: the same samples follow, and the
    // loader's states from then on record the mixture.
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("mixture");
    let old: IterState = serde_json::from_value(old).unwrap();
    assert_eq!(old.mixture, None);
    let resume = |state: IterState| {
        Loader::new(
            Arc::clone(&dataset),
            LoaderConfig {
                resume: Some(state),
                workers: 2,
                ..config(&[0.5, 0.5])
            },
        )
        .unwrap()
    };
    let from_old = resume(old.clone());
    assert_eq!(from_old.state(), state);
    assert_eq!(keys(from_old), keys(resume(state)));
    // It is checked as before: by seed, epoch and length only.
    Loader::new(
        Arc::clone(&dataset),
        LoaderConfig {
            resume: Some(old),
            ..config(&[0.8, 0.2])
        },
    )
    .unwrap();
}
