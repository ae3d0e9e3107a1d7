//! Packing in parallel writes the cache a single job writes, byte for byte; a failure, a panic
//! or a cancellation stops every worker and names what failed.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_manifest::CompressionAlgo;
use dsrt_pack::{pack, Convert, Emit, FileTree, ImageFolder, PackError, PackOptions};
use dsrt_reader::{Cache, OpenOptions, SampleBuf};
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A deterministic pseudo-random stream (xorshift), so the tree is the same on every run.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// An ImageFolder of `files` files of 0-3000 bytes over 5 classes, some in subdirectories.
fn image_folder(root: &Path, files: usize) {
    let mut random = Bytes(0x9e37_79b9_7f4a_7c15);
    for i in 0..files {
        let class = ["zebra", "ant", "cat", "dog", "emu"][i % 5];
        let sub = if i % 7 == 0 { "nested/" } else { "" };
        let path = root.join(format!("{class}/{sub}{i:05}.jpg"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let len = usize::try_from(random.next() % 3000).unwrap();
        let bytes: Vec<u8> = (0..len).map(|_| (random.next() % 7) as u8).collect();
        std::fs::write(path, bytes).unwrap();
    }
}

use dsrt_atlas_test_runner::files_below as files_of;

fn write<C: Convert>(
    convert: &C,
    schema: Schema,
    out: &Path,
    compression: CompressionAlgo,
    options: &PackOptions<'_>,
) -> Result<(), PackError> {
    let options_w = WriterOptions::new("parallel", schema)
        .compression(compression)
        .max_shard_bytes(20_000);
    let mut writer = CacheWriter::create(out, options_w)?;
    pack(convert, &mut writer, options)?;
    writer.finish()?;
    Ok(())
}

#[test]
fn one_two_and_three_jobs_write_the_same_cache() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 700);
    let folder = ImageFolder::scan(&input).unwrap();
    assert_eq!(folder.classes(), ["ant", "cat", "dog", "emu", "zebra"]);
    for compression in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let mut caches = Vec::new();
        for jobs in [1, 2, 3] {
            let out = root.path().join(format!("{compression:?}-{jobs}"));
            let options = PackOptions::default().jobs(jobs).queue(3);
            write(&folder, ImageFolder::schema(), &out, compression, &options).unwrap();
            caches.push(files_of(&out));
        }
        assert!(caches[0].len() > 10, "several shards");
        assert_eq!(caches[0], caches[1], "{compression:?}: 1 vs 2 jobs");
        assert_eq!(caches[0], caches[2], "{compression:?}: 1 vs 3 jobs");
    }
    // Every sample is its file, with its label, class and path.
    let cache = Cache::open(root.path().join("Lz4-3"), OpenOptions::default()).unwrap();
    assert_eq!(cache.len(), 700);
    let mut buf = SampleBuf::new();
    let mut seen = 0;
    for sample in 0..cache.len() {
        let read = cache.read(sample, &mut buf).unwrap();
        let values: Vec<ValueRef<'_>> = read.metadata.values().collect();
        let (ValueRef::Int64(label), ValueRef::Utf8(class), ValueRef::Utf8(path)) =
            (values[0], values[1], values[2])
        else {
            panic!("{values:?}");
        };
        assert_eq!(folder.classes()[usize::try_from(label).unwrap()], class);
        assert!(path.starts_with(&format!("{class}/")), "{path}");
        assert_eq!(read.payload, std::fs::read(input.join(path)).unwrap());
        seen += 1;
    }
    assert_eq!(seen, 700);
}

#[test]
fn a_file_tree_packs_the_same_with_any_number_of_jobs() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("tree");
    image_folder(&input, 200);
    std::fs::write(input.join("top.txt"), b"top").unwrap();
    let tree = FileTree::scan(&input).unwrap();
    assert_eq!(tree.len(), 201);
    let one = root.path().join("one");
    let four = root.path().join("four");
    write(
        &tree,
        FileTree::schema(),
        &one,
        CompressionAlgo::None,
        &PackOptions::default().jobs(1),
    )
    .unwrap();
    write(
        &tree,
        FileTree::schema(),
        &four,
        CompressionAlgo::None,
        &PackOptions::default().jobs(4),
    )
    .unwrap();
    assert_eq!(files_of(&one), files_of(&four));
}

/// A conversion of `units` units of 10 samples, whose unit `fail_at` fails (or panics), and
/// which records how far ahead of the slow unit 0 the workers claimed units.
struct Scripted {
    units: Vec<usize>,
    fail_at: Option<usize>,
    panic: bool,
    slow_first: bool,
    started: Mutex<Vec<usize>>,
    claimed_while_first_ran: AtomicUsize,
}

impl Scripted {
    fn new(units: usize) -> Self {
        Self {
            units: (0..units).collect(),
            fail_at: None,
            panic: false,
            slow_first: false,
            started: Mutex::new(Vec::new()),
            claimed_while_first_ran: AtomicUsize::new(0),
        }
    }

    fn schema() -> Schema {
        Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap()
    }
}

impl Convert for Scripted {
    type Unit = usize;

    fn cache_schema(&self) -> Schema {
        Scripted::schema()
    }

    fn units(&self) -> &[usize] {
        &self.units
    }

    fn convert(&self, unit: &usize, emit: &mut Emit<'_>) -> Result<(), PackError> {
        let unit = *unit;
        self.started.lock().unwrap().push(unit);
        if unit == 0 && self.slow_first {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let furthest = self
                .started
                .lock()
                .unwrap()
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            self.claimed_while_first_ran
                .store(furthest, Ordering::SeqCst);
        }
        for i in 0..10 {
            if Some(unit) == self.fail_at && i == 4 {
                if self.panic {
                    panic!("converter bug in unit {unit}");
                }
                return Err(PackError::Input {
                    input: format!("unit {unit}"),
                    reason: "bad input".into(),
                });
            }
            let n = i64::try_from(unit * 10 + i).unwrap();
            emit.sample(
                || format!("unit {unit}"),
                n.to_le_bytes().to_vec(),
                vec![Value::Int64(n)],
            )?;
        }
        Ok(())
    }
}

#[test]
fn the_first_failing_unit_stops_the_run_and_names_its_input() {
    let root = tempfile::tempdir().unwrap();
    let mut scripted = Scripted::new(40);
    scripted.fail_at = Some(17);
    let error = write(
        &scripted,
        Scripted::schema(),
        &root.path().join("c"),
        CompressionAlgo::None,
        &PackOptions::default().jobs(3).queue(2),
    )
    .unwrap_err();
    assert!(
        matches!(&error, PackError::Input { input, .. } if input == "unit 17"),
        "{error}"
    );
    // Workers stopped soon after: never far past the failing unit.
    let started = scripted.started.lock().unwrap();
    assert!(started.iter().all(|&u| u < 17 + 2 * 3 + 3), "{started:?}");
}

#[test]
fn a_panicking_converter_is_an_error_not_a_short_cache() {
    let root = tempfile::tempdir().unwrap();
    let mut scripted = Scripted::new(12);
    scripted.fail_at = Some(5);
    scripted.panic = true;
    let error = write(
        &scripted,
        Scripted::schema(),
        &root.path().join("c"),
        CompressionAlgo::None,
        &PackOptions::default().jobs(2),
    )
    .unwrap_err();
    assert!(
        matches!(&error, PackError::WorkerPanicked(m) if m.contains("unit 5")),
        "{error}"
    );
    assert!(!root.path().join("c/manifest.json").exists());
}

#[test]
fn workers_claim_at_most_twice_their_number_of_units_ahead() {
    let root = tempfile::tempdir().unwrap();
    let mut scripted = Scripted::new(60);
    scripted.slow_first = true;
    write(
        &scripted,
        Scripted::schema(),
        &root.path().join("c"),
        CompressionAlgo::None,
        &PackOptions::default().jobs(3).queue(100),
    )
    .unwrap();
    // While unit 0 sleeps, the other workers finish units 1 to 5 (their queues take every
    // sample) and none may start unit 2 * jobs = 6 or later.
    let furthest = scripted.claimed_while_first_ran.load(Ordering::SeqCst);
    assert_eq!(furthest, 5);
    let cache = Cache::open(root.path().join("c"), OpenOptions::default()).unwrap();
    assert_eq!(cache.len(), 600);
}

#[test]
fn a_cancelled_run_stops_with_cancelled() {
    let root = tempfile::tempdir().unwrap();
    let scripted = Scripted::new(1000);
    let token = dsrt_pack::CancelToken::new();
    let fired = token.clone();
    let progress = move |samples: u64| {
        if samples == 50 {
            fired.cancel();
        }
    };
    let error = write(
        &scripted,
        Scripted::schema(),
        &root.path().join("c"),
        CompressionAlgo::None,
        &PackOptions::default()
            .jobs(2)
            .cancel(token)
            .progress(&progress),
    )
    .unwrap_err();
    assert!(matches!(error, PackError::Cancelled), "{error}");
    assert!(scripted.started.lock().unwrap().len() < 100);
}
