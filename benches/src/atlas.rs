//! Atlas fixtures shared by the `atlas_*` benchmark groups and their baselines.
//!
//! Every builder is deterministic (names from a counter, values from [`SplitMix`]), so a group
//! and its baseline measure the same bytes in every run. Baselines get the same data in plain
//! array-format form: the footer's msgpack+zstd frame for a naive decode, a segment copied out
//! of `data.atlas` as a standalone object, and a standalone array-format file written with the
//! writer configuration Atlas uses.

use crate::SplitMix;
use array_format::{ArrayWriter, WriterConfig, ZstdCodec, DEFAULT_BLOCK_TARGET_SIZE};
use atlas::format::{wire, Codec, DType, FooterBuilder, InternedSchema, HEADER_SIZE};
use atlas::ndarray::{ArrayD, IxDyn};
use atlas::object_store::path::Path;
use atlas::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use atlas::{ArraySpec, Atlas, AtlasWriter, DatasetSpec, WriterOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The five variables of the footer benchmark's one schema.
pub const VARIABLES: [&str; 5] = [
    "temperature",
    "pressure",
    "humidity",
    "wind_speed",
    "precipitation",
];

/// `created_unix_ms` of every fixture, so output is reproducible.
pub const CREATED_UNIX_MS: i64 = 1_700_000_000_000;

/// Dataset `i`'s name: `station_000123_2024`.
pub fn station_name(i: usize) -> String {
    format!("station_{i:06}_2024")
}

/// A tokio runtime for driving the async API from a benchmark loop.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime builds")
}

/// Whether the Atlas groups time with process CPU time (`ATLAS_BENCH_CLOCK=cpu`) instead of
/// the wall clock (the default).
///
/// On a machine shared with other builds, wall time counts the periods this process waited for
/// a core, and baseline and candidate run at different moments, so their ratio swings with the
/// neighbours' load. CPU time counts only what this process ran (all its threads, so the
/// blocking-pool threads `LocalFileSystem` reads on count too).
pub fn cpu_clock() -> bool {
    ["BENCH_CLOCK", "ATLAS_BENCH_CLOCK"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| v == "cpu"))
}

/// CPU time of every thread of this process so far, threads that have exited included:
/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, nanosecond resolution.
///
/// (It used to sum `/proc/self/task/*/schedstat`, which the kernel updates only at scheduler
/// ticks for a running thread, so a sample shorter than a tick could read as zero time, and
/// which forgets threads that have exited.)
pub fn process_cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(now.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos)
}

/// A point on the clock [`cpu_clock`] selects.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Stamp {
    /// Now.
    pub fn now() -> Self {
        Self {
            wall: Instant::now(),
            cpu: cpu_clock().then(process_cpu_time),
        }
    }

    /// Time since this stamp, on the same clock.
    pub fn elapsed(&self) -> Duration {
        match self.cpu {
            Some(start) => process_cpu_time().saturating_sub(start),
            None => self.wall.elapsed(),
        }
    }
}

/// For `Bencher::iter_custom`: runs `routine` `iters` times, timed as a whole on the selected
/// clock; outputs drop inside the timing, as with `Bencher::iter`.
pub fn time_iters<O>(iters: u64, mut routine: impl FnMut() -> O) -> Duration {
    let start = Stamp::now();
    for _ in 0..iters {
        std::hint::black_box(routine());
    }
    start.elapsed()
}

/// For `Bencher::iter_custom`: `iters` times, an untimed `setup`, then `routine` timed on the
/// selected clock; outputs drop outside the timing, as with `Bencher::iter_batched`.
pub fn time_batched<I, O>(
    iters: u64,
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I) -> O,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let input = setup();
        let start = Stamp::now();
        let output = std::hint::black_box(routine(input));
        total += start.elapsed();
        drop(output);
    }
    total
}

/// A footer frame as it sits in `data.atlas`, with where its segments end.
#[derive(Debug, Clone)]
pub struct FooterFrame {
    /// zstd(msgpack(CollectionFooter)).
    pub frame: Vec<u8>,
    /// The footer's first byte: segments tile `[8, segments_end)`.
    pub segments_end: u64,
}

/// The footer of `datasets` datasets sharing one schema of the five [`VARIABLES`] (f32 each),
/// named by [`station_name`], each segment 1 MiB.
pub fn footer_frame(datasets: usize) -> FooterFrame {
    const SEG_LEN: u64 = 1 << 20;
    let mut builder = FooterBuilder::new();
    let f32 = builder
        .intern_dtype(&DType::Float32)
        .expect("pool has room");
    let mut schema = InternedSchema::default();
    for variable in VARIABLES {
        let name = builder.intern_string(variable).expect("pool has room");
        schema.arrays.push((name, f32));
    }
    let schema = builder.intern_schema(schema).expect("pool has room");
    for i in 0..datasets {
        builder
            .add_dataset(&station_name(i), schema)
            .expect("names are distinct");
    }
    let mut offset = HEADER_SIZE;
    for variable in VARIABLES {
        builder
            .add_variable(variable, offset, SEG_LEN)
            .expect("variables are distinct");
        offset += SEG_LEN;
    }
    let footer = builder.finish(Codec::Zstd, CREATED_UNIX_MS);
    FooterFrame {
        frame: wire::encode_footer(&footer),
        segments_end: offset,
    }
}

/// Writes `datasets` stations, each with one `temperature` array of 24 f32 values, as a
/// collection at `prefix`.
pub async fn write_station_collection(store: Arc<dyn ObjectStore>, prefix: &Path, datasets: usize) {
    let mut rng = SplitMix::new(17);
    let options = WriterOptions {
        created_unix_ms: CREATED_UNIX_MS,
        ..WriterOptions::default()
    };
    let mut writer = AtlasWriter::new(store, prefix, options);
    for i in 0..datasets {
        let values: Vec<f32> = (0..24).map(|_| small_float(&mut rng)).collect();
        let data = ArrayD::from_shape_vec(IxDyn(&[24]), values).expect("24 values");
        writer
            .write_dataset(
                DatasetSpec::new(station_name(i)).array(ArraySpec::new("temperature", data)),
            )
            .expect("valid dataset");
    }
    writer.finish().await.expect("collection finishes");
}

/// Copies the segment of `variable` out of the collection at `prefix` into the standalone
/// object `to`: byte for byte the array-format file the collection embeds.
pub async fn copy_segment_out(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    variable: &str,
    to: &Path,
) {
    let atlas = Atlas::open(Arc::clone(store), prefix)
        .await
        .expect("collection opens");
    let (_, entry) = atlas
        .variables()
        .find(|(name, _)| *name == variable)
        .expect("variable exists");
    let bytes = store
        .get_range(
            atlas.container_path(),
            entry.seg_offset..entry.seg_offset + entry.seg_len,
        )
        .await
        .expect("segment bytes read");
    store
        .put(to, PutPayload::from(bytes))
        .await
        .expect("segment copy written");
}

/// `datasets` arrays of `rows x cols` f32 (a smooth field plus noise, so zstd has work to do
/// but cannot make it vanish), named by [`station_name`].
pub fn float_fields(datasets: usize, rows: usize, cols: usize) -> Vec<(String, ArrayD<f32>)> {
    let mut rng = SplitMix::new(23);
    (0..datasets)
        .map(|d| {
            let values: Vec<f32> = (0..rows * cols)
                .map(|k| {
                    let (r, c) = ((k / cols) as f32, (k % cols) as f32);
                    (r * 0.01 + d as f32).sin() * 10.0 + (c * 0.02).cos() + small_float(&mut rng)
                })
                .collect();
            let data = ArrayD::from_shape_vec(IxDyn(&[rows, cols]), values).expect("shape fits");
            (station_name(d), data)
        })
        .collect()
}

/// Writes `fields` as one variable, `field`, of a collection at `prefix`, chunked by `chunks`.
pub async fn write_field_collection(
    store: Arc<dyn ObjectStore>,
    prefix: &Path,
    fields: &[(String, ArrayD<f32>)],
    chunks: &[usize],
) {
    let options = WriterOptions {
        created_unix_ms: CREATED_UNIX_MS,
        ..WriterOptions::default()
    };
    let mut writer = AtlasWriter::new(store, prefix, options);
    for (name, data) in fields {
        let spec = ArraySpec::new("field", data.clone()).chunks(chunks.to_vec());
        writer
            .write_dataset(DatasetSpec::new(name).array(spec))
            .expect("valid dataset");
    }
    writer.finish().await.expect("collection finishes");
}

/// Writes `fields` straight to an array-format file at `path`, with the codec, level, block
/// size and chunking [`write_field_collection`] uses: the baseline for reads.
pub async fn write_field_file(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    fields: &[(String, ArrayD<f32>)],
    chunks: &[usize],
) {
    let mut writer = ArrayWriter::new(WriterConfig {
        block_target_size: DEFAULT_BLOCK_TARGET_SIZE,
        ..WriterConfig::new(ZstdCodec::new(WriterOptions::default().zstd_level))
    });
    for (name, data) in fields {
        writer
            .define_array::<f32>(
                name.as_str(),
                Vec::new(),
                data.shape().to_vec(),
                Some(chunks.to_vec()),
                None,
            )
            .expect("array defines");
        writer
            .write_array(name, vec![0; data.ndim()], data.view())
            .expect("array writes");
    }
    writer
        .finish(store, path.clone())
        .await
        .expect("file finishes");
}

/// A value in roughly `[-1, 1)`.
fn small_float(rng: &mut SplitMix) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}
