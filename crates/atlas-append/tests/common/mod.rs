//! What the growing-collection tests share: deterministic datasets, the child appender
//! process, and the checks of what a reader sees.
#![allow(dead_code)] // each test binary uses part of it

use atlas_append::Appender;
use atlas_reader::Atlas;
use atlas_writer::{ArraySpec, DatasetSpec, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_access::StoreLocation;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

/// Environment of a child appender: the collection, its writer index, how many datasets.
pub(crate) const CHILD_LOCATION: &str = "ATLAS_GROWING_TEST_LOCATION";
pub(crate) const CHILD_WRITER: &str = "ATLAS_GROWING_TEST_WRITER";
pub(crate) const CHILD_DATASETS: &str = "ATLAS_GROWING_TEST_DATASETS";

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Dataset `index` of writer `writer`: its name.
pub(crate) fn name(writer: usize, index: usize) -> String {
    format!("w{writer:02}_d{index:03}")
}

/// The values dataset `name` holds: 6 floats derived from the name, so any mix-up shows.
pub(crate) fn values(name: &str) -> Vec<f32> {
    let seed = name
        .bytes()
        .fold(17u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    (0..6u32)
        .map(|i| (seed.wrapping_add(i * 7919) % 100_000) as f32 / 8.0)
        .collect()
}

/// Dataset `name`: a `[2, 3]` `f32` array `temp` and the attribute `writer`.
pub(crate) fn dataset(name: &str, writer: usize) -> DatasetSpec {
    let data = ArrayD::from_shape_vec(IxDyn(&[2, 3]), values(name)).unwrap();
    DatasetSpec::new(name)
        .array(ArraySpec::new("temp", data).dims(["y", "x"]))
        .attr("writer", writer as i64)
}

/// Appends `count` datasets of writer `writer` to `location` as one commit; the attempts.
pub(crate) async fn append(location: &StoreLocation, writer: usize, count: usize) -> (u64, u32) {
    let mut appender = Appender::open(location, WriterOptions::default())
        .await
        .unwrap();
    for i in 0..count {
        let name = name(writer, i);
        appender.write_dataset(dataset(&name, writer)).unwrap();
    }
    let report = appender.commit().await.unwrap();
    assert_eq!(report.datasets, count);
    (report.version, report.attempts)
}

/// The child appender's body (the test binary run again): one append, then a line saying how
/// it went for the parent to read.
pub(crate) fn child_append() {
    let location = StoreLocation::parse(&std::env::var(CHILD_LOCATION).unwrap()).unwrap();
    let writer: usize = std::env::var(CHILD_WRITER).unwrap().parse().unwrap();
    let count: usize = std::env::var(CHILD_DATASETS).unwrap().parse().unwrap();
    let (version, attempts) = runtime().block_on(append(&location, writer, count));
    let mut out = std::io::stdout().lock();
    writeln!(out, "APPENDED version={version} attempts={attempts}").unwrap();
    out.flush().unwrap();
}

/// Runs `writers` child appenders of `count` datasets each on `location` at once; returns
/// each one's (version, attempts).
pub(crate) fn append_in_processes(
    location: &str,
    writers: std::ops::Range<usize>,
    count: usize,
) -> Vec<(u64, u32)> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = writers
        .map(|writer| {
            Command::new(&exe)
                .env(CHILD_LOCATION, location)
                .env(CHILD_WRITER, writer.to_string())
                .env(CHILD_DATASETS, count.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "a child appender failed: {:?}",
                out.status
            );
            let text = String::from_utf8(out.stdout).unwrap();
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix("APPENDED "))
                .unwrap_or_else(|| panic!("no report from a child: {text:?}"));
            let mut fields = line.split(' ');
            let version = fields.next().unwrap().strip_prefix("version=").unwrap();
            let attempts = fields.next().unwrap().strip_prefix("attempts=").unwrap();
            (version.parse().unwrap(), attempts.parse().unwrap())
        })
        .collect()
}

/// Every live dataset name of `atlas`.
pub(crate) fn names(atlas: &Atlas) -> BTreeSet<String> {
    atlas.datasets().map(|d| d.name().to_owned()).collect()
}

/// How many of `writers` have all `each` of their datasets in `names`, asserting that every
/// writer's datasets are all there or none are (an append is never seen in part).
pub(crate) fn whole_writers(
    names: &BTreeSet<String>,
    writers: std::ops::Range<usize>,
    each: usize,
) -> usize {
    let mut whole = 0;
    for writer in writers {
        let present = (0..each)
            .filter(|&i| names.contains(&name(writer, i)))
            .count();
        assert!(
            present == 0 || present == each,
            "writer {writer}: {present} of {each}"
        );
        whole += usize::from(present == each);
    }
    whole
}

/// Checks that every dataset of `atlas` holds what its writer wrote, read one by one and as
/// one run across the parts.
pub(crate) async fn check_contents(atlas: &Atlas) {
    let mut ordinals = Vec::new();
    let mut expected = Vec::new();
    for view in atlas.datasets() {
        let temp = view
            .read_array::<f32>("temp", vec![], vec![])
            .await
            .unwrap();
        assert_eq!(temp.shape(), &[2, 3], "{}", view.name());
        let want = values(view.name());
        assert_eq!(
            temp.iter().copied().collect::<Vec<_>>(),
            want,
            "{}",
            view.name()
        );
        assert_eq!(
            atlas.dataset_at(view.ordinal()).unwrap().name(),
            view.name()
        );
        ordinals.push(view.ordinal());
        expected.extend(want);
    }
    let run = atlas.read_run::<f32>("temp", &ordinals).await.unwrap();
    assert_eq!(run.values(), expected.as_slice());
    let stats = atlas.array_stats("temp").await.unwrap();
    assert_eq!(stats.datasets, atlas.dataset_count() as u64);
    assert_eq!(stats.row_count, 6 * atlas.dataset_count() as u64);
}

/// What one `AtlasWriter` with the default options and creation time `created` writes for
/// `specs` in order, under `dir` (what a compaction's part must equal byte for byte): its
/// `data.atlas` bytes and container size.
pub(crate) async fn fresh_write(
    dir: &std::path::Path,
    created: i64,
    specs: impl IntoIterator<Item = DatasetSpec>,
) -> (Vec<u8>, u64) {
    std::fs::create_dir_all(dir).unwrap();
    let store =
        std::sync::Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir).unwrap());
    let options = WriterOptions {
        created_unix_ms: created,
        ..WriterOptions::default()
    };
    let mut writer =
        atlas_writer::AtlasWriter::new(store, &object_store::path::Path::default(), options);
    for spec in specs {
        writer.write_dataset(spec).unwrap();
    }
    let summary = writer.finish().await.unwrap();
    (
        std::fs::read(dir.join("data.atlas")).unwrap(),
        summary.container_bytes,
    )
}

/// The `data.atlas` bytes of part `part` of the growing collection in directory `collection`.
pub(crate) fn part_bytes(collection: &std::path::Path, part: &str) -> Vec<u8> {
    std::fs::read(collection.join("parts").join(part).join("data.atlas")).unwrap()
}
