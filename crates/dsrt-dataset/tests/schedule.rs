//! A loader over real caches follows a schedule: each phase of the epoch holds each cache at
//! its share, the caches' passes run on across phases, the order does not depend on workers
//! and a state saved mid-phase resumes exactly; a bad phase is refused when the loader is
//! built.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_dataset::{Dataset, DatasetError, LoadedSample, Loader, LoaderConfig};
use dsrt_plan::{IterState, Phase, PlanConfig, PlanError, Schedule, Shuffle};
use dsrt_reader::OpenOptions;
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

const CACHES: [(&str, u64); 2] = [("code", 60), ("web", 90)];

/// Two caches whose payloads name them: `code0`..`code59`, `web0`..`web89`, in shards of a few
/// samples.
fn dataset(root: &Path) -> Arc<Dataset> {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let mut paths = Vec::new();
    for (name, count) in CACHES {
        let path = root.join(name);
        let mut writer = CacheWriter::create(
            &path,
            WriterOptions::new(name, schema.clone()).max_shard_bytes(300),
        )
        .unwrap();
        for i in 0..count {
            writer
                .add(
                    format!("{name}{i}").as_bytes(),
                    &Row::new().with("n", i as i64),
                )
                .unwrap();
        }
        writer.finish().unwrap();
        paths.push(path);
    }
    Arc::new(Dataset::open(&paths, OpenOptions::default()).unwrap())
}

/// 100 samples half and half, then 50 with 80% code.
fn two_phases() -> Schedule {
    Schedule {
        phases: vec![
            Phase {
                samples: 100,
                weights: vec![0.5, 0.5],
            },
            Phase {
                samples: 50,
                weights: vec![0.8, 0.2],
            },
        ],
    }
}

fn config(workers: usize) -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 5,
            shuffle: Shuffle::Local { window_shards: 2 },
            schedule: Some(two_phases()),
            ..PlanConfig::default()
        },
        epoch: 2,
        world_size: 1,
        workers,
        prefetch: 8,
        ..LoaderConfig::default()
    }
}

/// The cache a payload came from (by its name) and the sample it names.
fn source(sample: &LoadedSample) -> (usize, u64) {
    let text = std::str::from_utf8(&sample.payload).unwrap();
    let cache = CACHES
        .iter()
        .position(|(name, _)| text.starts_with(name))
        .unwrap();
    let index: u64 = text[CACHES[cache].0.len()..].parse().unwrap();
    assert_eq!(index, sample.key.sample_id, "the payload is the key's");
    (cache, index)
}

fn load(config: LoaderConfig, dataset: &Arc<Dataset>) -> Vec<LoadedSample> {
    Loader::new(Arc::clone(dataset), config)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_loader_follows_a_two_phase_schedule() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let samples = load(config(2), &dataset);
    assert_eq!(samples.len(), 150);

    // Phase by phase, each cache exactly at its share; within a phase, spread at its rate.
    let mut counts = [[0u64; 2]; 2];
    for sample in &samples {
        let phase = usize::from(sample.global_position >= 100);
        counts[phase][source(sample).0] += 1;
    }
    assert_eq!(counts, [[50, 50], [40, 10]]);
    let code_in_first_20_of_phase_1 = samples[100..120]
        .iter()
        .filter(|s| source(s).0 == 0)
        .count();
    assert!(
        (15..=17).contains(&code_in_first_20_of_phase_1),
        "{code_in_first_20_of_phase_1}"
    );

    // Code draws 90 samples from 60: its first pass (its 60 first draws, 50 in phase 0 and 10
    // in phase 1) reads every sample once, and the next 30 are distinct too.
    let code: Vec<u64> = samples
        .iter()
        .map(source)
        .filter(|&(cache, _)| cache == 0)
        .map(|(_, sample)| sample)
        .collect();
    assert_eq!(code.len(), 90);
    assert_eq!(
        code[..60].iter().collect::<BTreeSet<_>>().len(),
        60,
        "a pass spans the phase change without a repeat"
    );
    assert_eq!(code[60..].iter().collect::<BTreeSet<_>>().len(), 30);

    // The samples are the plan's, and the order depends on no worker count.
    let (plan, _) = dataset
        .plan_for(
            &config(0).plan,
            2,
            dsrt_plan::Topology::ranks(1).unwrap(),
            dsrt_plan::RemainderPolicy::Pad,
            None,
        )
        .unwrap();
    assert_eq!(plan.phases().len(), 2);
    for sample in &samples {
        assert_eq!(
            plan.get(sample.global_position).unwrap().sample,
            sample.key.sample_id
        );
    }
    let keys = |samples: &[LoadedSample]| samples.iter().map(|s| s.key).collect::<Vec<_>>();
    for workers in [0, 3] {
        assert_eq!(
            keys(&load(config(workers), &dataset)),
            keys(&samples),
            "{workers} workers"
        );
    }
}

#[test]
fn a_scheduled_epoch_saved_mid_phase_resumes_exactly() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let reference: Vec<_> = load(config(2), &dataset).iter().map(|s| s.key).collect();
    for stop in [37, 100, 123] {
        let mut loader = Loader::new(Arc::clone(&dataset), config(1)).unwrap();
        for _ in 0..stop {
            loader.next().unwrap().unwrap();
        }
        let saved = serde_json::to_string(&loader.state()).unwrap();
        drop(loader);
        let state: IterState = serde_json::from_str(&saved).unwrap();
        let resumed = load(
            LoaderConfig {
                resume: Some(state),
                ..config(2)
            },
            &dataset,
        );
        let resumed: Vec<_> = resumed.iter().map(|s| s.key).collect();
        assert_eq!(resumed, reference[stop..], "stopped at {stop}");
    }
}

#[test]
fn a_bad_phase_is_refused_naming_it() {
    let root = tempfile::tempdir().unwrap();
    let dataset = dataset(root.path());
    let mut schedule = two_phases();
    schedule.phases[1].weights = vec![1.0];
    let mut bad = config(0);
    bad.plan.schedule = Some(schedule);
    let error = Loader::new(Arc::clone(&dataset), bad).unwrap_err();
    assert!(
        matches!(error, DatasetError::Plan(PlanError::Phase { phase: 1, .. })),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("1 weights for 2 caches"),
        "{error}"
    );
    let mut conflict = config(0);
    conflict.plan.samples_per_epoch = Some(150);
    assert!(matches!(
        Loader::new(dataset, conflict).unwrap_err(),
        DatasetError::Plan(PlanError::ScheduleConflict {
            setting: "samples_per_epoch"
        })
    ));
}
