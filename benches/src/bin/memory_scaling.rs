//! Time and heap scaling of DatasetRT `Cache::open` and the Atlas footer decode against the
//! number of samples and datasets, printed as markdown tables.
//!
//! ```sh
//! cargo run --release -p dsrt-atlas-benches --bin memory_scaling
//! ```
//!
//! A counting global allocator tracks live heap bytes (current and peak) and the number of
//! allocations (`alloc`, `alloc_zeroed` and `realloc` each count one). For every size the
//! measured operation runs five times; the time is the median wall time of the five, and the
//! heap figures are those of the last run (the first may pay one-time lazy initialisation):
//!
//! - retained: live heap after the operation minus before it, while its result is still held;
//! - peak: the highest live heap during the operation minus the live heap before it;
//! - allocations: allocations made during the operation.
//!
//! DatasetRT: caches of 10,000, 100,000 and 1,000,000 samples of 16-byte payloads, written
//! once into a temp dir; `Cache::open` through the `datasetrt` facade with default
//! `OpenOptions` (not validated: no hashing). index.bin and metadata.arrow are mapped, not read
//! into the heap, so their sizes are shown beside the heap figures as the file-backed cost.
//!
//! Atlas: the footer of `dsrt_atlas_benches::atlas::footer_frame` (one schema of five f32 variables,
//! names `station_NNNNNN_2024`) at 1,000, 10,000 and 100,000 datasets, through
//! `wire::decode_and_validate`, as `Atlas::open` does.
//!
//! Atlas writer: the datasets `atlas demo` writes, at 10,000, 100,000 and 1,000,000 datasets
//! (`MEMORY_SCALING_WRITER_SIZES=10000,100000` to choose), written by `AtlasWriter` to local
//! disk; the peak heap covers writing and `finish`.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a tool that owns its output
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)] // reporting arithmetic

use atlas::format::{
    wire, Codec, CollectionFooter, DType, FooterBuilder, IndexPairs, InternedSchema,
    CONTAINER_OBJECT, FOOTER_BUDGET_BASE, FOOTER_BUDGET_PER_STORED_BYTE, HEADER_SIZE,
};
use atlas::ndarray::{ArrayD, IxDyn};
use atlas::object_store::{local::LocalFileSystem, path::Path, ObjectStore};
use atlas::{ArraySpec, Atlas, AtlasWriter, Attr, DatasetSpec, FillValue, WriterOptions};
use datasetrt::raw::{INDEX_FILE_NAME, METADATA_FILE_NAME};
use datasetrt::{Cache, OpenOptions};
use dsrt_atlas_benches::atlas::footer_frame;
use dsrt_atlas_benches::write_tiny_cache;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs per measured size; the median time is reported.
const RUNS: usize = 5;
/// Payload bytes per DatasetRT sample.
const PAYLOAD_LEN: usize = 16;

/// Live heap bytes now.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// Highest live heap bytes since the last [`Probe::start`].
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations so far.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting.
struct Counting;

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and returns
// its result; the only other work is updating atomic counters, which never allocates, so the
// `GlobalAlloc` contract is exactly `System`'s.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`; forwarded unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc_zeroed`'s contract for `layout`; forwarded unchanged.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator (so by `System`) for `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was returned by this allocator (so by `System`) for `layout`, and the
        // caller upholds `realloc`'s contract for `new_size`; forwarded unchanged.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The counters at the start of a measured operation.
struct Probe {
    current: usize,
    allocations: u64,
}

impl Probe {
    /// Resets the peak to the live heap now and remembers the counters.
    fn start() -> Self {
        let current = CURRENT.load(Ordering::Relaxed);
        PEAK.store(current, Ordering::Relaxed);
        Self {
            current,
            allocations: ALLOCATIONS.load(Ordering::Relaxed),
        }
    }

    /// The heap figures since [`Probe::start`], taken while the result is still alive.
    fn finish(&self) -> Heap {
        Heap {
            retained: CURRENT.load(Ordering::Relaxed).saturating_sub(self.current),
            peak: PEAK.load(Ordering::Relaxed).saturating_sub(self.current),
            allocations: ALLOCATIONS.load(Ordering::Relaxed) - self.allocations,
        }
    }
}

/// Heap cost of one operation.
#[derive(Debug, Clone, Copy, Default)]
struct Heap {
    retained: usize,
    peak: usize,
    allocations: u64,
}

/// `RUNS` runs of `op`: the median time and the last run's heap figures.
fn measure<T>(mut op: impl FnMut() -> T) -> (Duration, Heap) {
    let mut times = Vec::with_capacity(RUNS);
    let mut heap = Heap::default();
    for _ in 0..RUNS {
        let probe = Probe::start();
        let start = Instant::now();
        let result = black_box(op());
        times.push(start.elapsed());
        heap = probe.finish();
        drop(result);
    }
    times.sort();
    (times[RUNS / 2], heap)
}

fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f >= KIB * KIB {
        format!("{:.2} MiB", f / (KIB * KIB))
    } else if f >= KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{n} B")
    }
}

fn time(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros >= 1000.0 {
        format!("{:.2} ms", micros / 1000.0)
    } else {
        format!("{micros:.1} µs")
    }
}

fn per(n: f64, items: u64) -> String {
    format!("{:.1}", n / items as f64)
}

/// One measured size.
struct Row {
    items: u64,
    time: Duration,
    heap: Heap,
}

/// The marginal cost per item between the two largest sizes: what one more item costs once
/// fixed costs are out of the picture.
fn marginal(rows: &[Row], unit: &str) -> String {
    let (Some(a), Some(b)) = (rows.get(rows.len().wrapping_sub(2)), rows.last()) else {
        return String::new();
    };
    let items = (b.items - a.items) as f64;
    let ns = (b.time.as_secs_f64() - a.time.as_secs_f64()) * 1e9 / items;
    let retained = (b.heap.retained as f64 - a.heap.retained as f64) / items;
    let peak = (b.heap.peak as f64 - a.heap.peak as f64) / items;
    let allocations = (b.heap.allocations as f64 - a.heap.allocations as f64) / items;
    format!(
        "Marginal cost from {} to {} {unit}s: {ns:.1} ns, {retained:.1} B retained, \
         {peak:.1} B peak, {allocations:.3} allocations per {unit}.",
        a.items, b.items
    )
}

fn datasetrt_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    println!("### DatasetRT `Cache::open` (default options, {PAYLOAD_LEN}-byte payloads)\n");
    println!(
        "| samples | open (median of {RUNS}) | ns/sample | heap retained | B/sample | \
         peak heap during open | peak B/sample | allocations | index.bin (mapped) | \
         metadata.arrow (mapped) | mapped B/sample |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for samples in [10_000u64, 100_000, 1_000_000] {
        let path = dir.path().join(format!("c{samples}"));
        write_tiny_cache(&path, samples, PAYLOAD_LEN);
        let size = |name: &str| {
            std::fs::metadata(path.join(name))
                .expect("cache file exists")
                .len()
        };
        let (index, metadata) = (size(INDEX_FILE_NAME), size(METADATA_FILE_NAME));
        let (time_taken, heap) = measure(|| {
            let cache = Cache::open(&path, OpenOptions::default()).expect("cache opens");
            assert_eq!(cache.len(), samples);
            cache
        });
        println!(
            "| {samples} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            time(time_taken),
            per(time_taken.as_nanos() as f64, samples),
            bytes(heap.retained as u64),
            per(heap.retained as f64, samples),
            bytes(heap.peak as u64),
            per(heap.peak as f64, samples),
            heap.allocations,
            bytes(index),
            bytes(metadata),
            per((index + metadata) as f64, samples),
        );
        rows.push(Row {
            items: samples,
            time: time_taken,
            heap,
        });
    }
    println!("\n{}\n", marginal(&rows, "sample"));
}

fn atlas_footer_decode() {
    println!("### Atlas footer decode + validation (`wire::decode_and_validate`)\n");
    println!(
        "| datasets | frame (zstd) | decode+validate (median of {RUNS}) | ns/dataset | \
         heap retained | B/dataset | peak heap during decode | peak B/dataset | allocations |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for datasets in [1_000u64, 10_000, 100_000] {
        let fixture = footer_frame(datasets as usize);
        let (time_taken, heap) = measure(|| {
            let decoded = wire::decode_and_validate(&fixture.frame, fixture.segments_end)
                .expect("fixture footer is valid");
            assert_eq!(decoded.0.datasets.len() as u64, datasets);
            decoded
        });
        println!(
            "| {datasets} | {} | {} | {} | {} | {} | {} | {} | {} |",
            bytes(fixture.frame.len() as u64),
            time(time_taken),
            per(time_taken.as_nanos() as f64, datasets),
            bytes(heap.retained as u64),
            per(heap.retained as f64, datasets),
            bytes(heap.peak as u64),
            per(heap.peak as f64, datasets),
            heap.allocations,
        );
        rows.push(Row {
            items: datasets,
            time: time_taken,
            heap,
        });
    }
    println!("\n{}\n", marginal(&rows, "dataset"));
}

/// One dataset as `atlas demo` writes it: a chunked 4x8 f32 array with an attribute, a
/// one-element string array, a declared 4-element f64 array, and a dataset attribute.
fn demo_dataset(i: usize) -> DatasetSpec {
    let base = i as f32;
    let temperature = ArrayD::from_shape_vec(
        IxDyn(&[4, 8]),
        (0..32).map(|j| base + j as f32 * 0.5).collect(),
    )
    .expect("4x8 values");
    let station =
        ArrayD::from_shape_vec(IxDyn(&[1]), vec![format!("station-{}", i % 3)]).expect("one value");
    DatasetSpec::new(format!("month_{i:03}"))
        .array(
            ArraySpec::new("temperature", temperature)
                .dims(["y", "x"])
                .chunks(vec![2, 4])
                .attr("units", "celsius"),
        )
        .array(ArraySpec::new("station", station))
        .array(ArraySpec::declared::<f64>("pressure", vec![4]).fill(FillValue::Float(f64::NAN)))
        .attr("month", Attr::Int64(i as i64))
}

/// `AtlasWriter` on local disk, the datasets of `atlas demo`: one run per size (the largest
/// takes a while), heap peak over writing and `finish` together.
fn atlas_writer() {
    let sizes: Vec<u64> = std::env::var("MEMORY_SCALING_WRITER_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    println!("### Atlas `AtlasWriter` (the datasets of `atlas demo`, local disk)\n");
    println!(
        "| datasets | write + finish | µs/dataset | container | peak heap | peak B/dataset | \
         allocations |"
    );
    println!("|---|---|---|---|---|---|---|");
    let runtime = dsrt_atlas_benches::atlas::runtime();
    let mut rows = Vec::new();
    for datasets in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).expect("local store"));
        let probe = Probe::start();
        let start = Instant::now();
        let mut writer = AtlasWriter::new(store, &Path::from("demo"), WriterOptions::default());
        for i in 0..datasets as usize {
            writer
                .write_dataset(demo_dataset(i))
                .expect("dataset is valid");
        }
        let summary = runtime
            .block_on(writer.finish())
            .expect("collection written");
        let time_taken = start.elapsed();
        let heap = probe.finish();
        println!(
            "| {datasets} | {} | {:.2} | {} | {} | {} | {} |",
            time(time_taken),
            time_taken.as_secs_f64() * 1e6 / datasets as f64,
            bytes(summary.container_bytes),
            bytes(heap.peak as u64),
            per(heap.peak as f64, datasets),
            heap.allocations,
        );
        rows.push(Row {
            items: datasets,
            time: time_taken,
            heap,
        });
    }
    println!("\n{}\n", marginal(&rows, "dataset"));
}

/// One footer shape for the budget table: a name, and the footer it builds.
struct BudgetCase {
    name: &'static str,
    footer: CollectionFooter,
    segments_end: u64,
}

/// A footer of `datasets` datasets named by `name`, whose dataset `i` has schema
/// `schema_of(i)` (built on first use by `schema`), over `variables` segments of 1 byte.
fn budget_case(
    name: &'static str,
    datasets: usize,
    variables: &[String],
    dataset_name: impl Fn(usize) -> String,
    schema_of: impl Fn(usize, &mut FooterBuilder) -> InternedSchema,
) -> BudgetCase {
    let mut builder = FooterBuilder::new();
    for variable in variables {
        builder.intern_string(variable).expect("pool has room");
    }
    for i in 0..datasets {
        let schema = schema_of(i, &mut builder);
        let schema = builder.intern_schema(schema).expect("pool has room");
        builder
            .add_dataset(&dataset_name(i), schema)
            .expect("names are distinct");
    }
    let mut offset = HEADER_SIZE;
    for variable in variables.iter().map(String::as_str).chain(["_datasets"]) {
        builder
            .add_variable(variable, offset, 1)
            .expect("variables are distinct");
        offset += 1;
    }
    BudgetCase {
        name,
        footer: builder.finish(Codec::Zstd, 0),
        segments_end: offset,
    }
}

/// A schema of the arrays `arrays` (f32) and the dataset attributes `attrs` (i64), each key
/// also carried by the first array.
fn budget_schema(builder: &mut FooterBuilder, arrays: &[&str], attrs: &[String]) -> InternedSchema {
    let f32 = builder
        .intern_dtype(&DType::Float32)
        .expect("pool has room");
    let i64 = builder.intern_dtype(&DType::Int64).expect("pool has room");
    let mut schema = InternedSchema::default();
    for array in arrays {
        let name = builder.intern_string(array).expect("pool has room");
        schema.arrays.push((name, f32));
    }
    let mut keys = IndexPairs::default();
    for key in attrs {
        let key = builder.intern_string(key).expect("pool has room");
        schema.attrs.push((key, i64));
        keys.push((key, i64));
    }
    if !attrs.is_empty() && !arrays.is_empty() {
        schema.array_attrs.push((0, keys));
    }
    schema
}

/// The honest extremes the footer budget's multiple is chosen from
/// (`FOOTER_BUDGET_PER_STORED_BYTE`): many datasets with short, shortest and long names, many
/// schemas, many attributes, many variables.
fn budget_cases() -> Vec<BudgetCase> {
    let five: Vec<String> = ["t2m", "u10", "v10", "msl", "tp"]
        .map(String::from)
        .to_vec();
    let five_refs: Vec<&str> = five.iter().map(String::as_str).collect();
    let station = |i: usize| format!("station_{i:06}_2024");
    // The CMIP-style path of a file, 200 bytes, differing only in its counter: the most
    // compressible long names a collection is likely to hold.
    let path = |i: usize| {
        let name = format!(
            "CMIP6/ScenarioMIP/NCAR/CESM2/ssp585/r1i1p1f1/Amon/tas/gn/v20190730/\
             tas_Amon_CESM2_ssp585_r1i1p1f1_gn_{i:09}_regridded_to_1deg_bilinear_with_the_\
             land_sea_mask_applied_version_2_final_release_candidate.nc"
        );
        format!("{name:_<200}")
    };
    // The shortest distinct names: base 36 counters.
    let shortest = |mut i: usize| {
        let mut name = Vec::new();
        loop {
            name.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[i % 36]);
            i /= 36;
            if i == 0 {
                break;
            }
        }
        String::from_utf8(name).expect("ascii")
    };
    let keys: Vec<String> = (0..20).map(|k| format!("attribute_key_{k:02}")).collect();
    let many_keys: Vec<String> = (0..200).map(|k| format!("attribute_{k:03}")).collect();
    let many_variables: Vec<String> = (0..2_000)
        .map(|v| format!("variable_with_a_long_descriptive_name_{v:04}"))
        .collect();
    let one_schema = |_: usize, b: &mut FooterBuilder| budget_schema(b, &five_refs, &[]);
    vec![
        budget_case(
            "100,000 datasets, short names",
            100_000,
            &five,
            station,
            one_schema,
        ),
        budget_case(
            "1,000,000 datasets, short names",
            1_000_000,
            &five,
            station,
            one_schema,
        ),
        budget_case(
            "1,000,000 datasets, shortest names",
            1_000_000,
            &five,
            shortest,
            one_schema,
        ),
        budget_case(
            "100,000 datasets, 200-byte names",
            100_000,
            &five,
            path,
            one_schema,
        ),
        budget_case(
            "1,000,000 datasets, 200-byte names",
            1_000_000,
            &five,
            path,
            one_schema,
        ),
        budget_case(
            "100,000 datasets, 100,000 schemas (own key set each)",
            100_000,
            &five,
            station,
            |i, b| {
                let own: Vec<String> = (0..20)
                    .filter(|k| (i + 1) >> k & 1 == 1)
                    .map(|k| keys[k].clone())
                    .collect();
                budget_schema(b, &five_refs, &own)
            },
        ),
        budget_case(
            "10,000 datasets, 10,000 schemas of 200 attributes",
            10_000,
            &five,
            station,
            |i, b| {
                // 199 of the 200 keys, a different one left out per 200 datasets, plus the
                // dataset's own key: every schema differs.
                let mut own: Vec<String> = many_keys
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i % 200)
                    .map(|(_, key)| key.clone())
                    .collect();
                own.push(format!("own_{i}"));
                budget_schema(b, &five_refs, &own)
            },
        ),
        budget_case(
            "100,000 datasets over 2,000 long-named variables",
            100_000,
            &many_variables,
            station,
            |i, b| {
                let arrays: Vec<&str> = (0..4)
                    .map(|a| many_variables[(i * 7 + a * 500) % 2_000].as_str())
                    .collect();
                budget_schema(b, &arrays, &[])
            },
        ),
    ]
}

/// `Atlas::open` of each honest extreme: stored and decoded footer sizes, what the open charged
/// to the footer's budget, and the measured peak heap, each per stored byte.
fn atlas_footer_budget() {
    use atlas::format::trailer::{encode_header, encode_trailer};
    use atlas::object_store::memory::InMemory;
    use atlas::object_store::{ObjectStoreExt, PutPayload};
    println!(
        "### Atlas footer budget: honest extremes (`Atlas::open`, `InMemory`, segments of 1 byte)\n"
    );
    println!(
        "| footer | stored | decoded | decoded / stored | charged | charged / stored | \
         peak heap of the open | peak / stored | share of the limit |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let runtime = dsrt_atlas_benches::atlas::runtime();
    for case in budget_cases() {
        let msgpack = wire::to_msgpack(&case.footer);
        let frame = wire::encode_footer(&case.footer);
        let mut container = encode_header().to_vec();
        container.resize(case.segments_end as usize, 0);
        container.extend_from_slice(&frame);
        container.extend_from_slice(&encode_trailer(frame.len() as u64));
        drop(case.footer);
        let store = Arc::new(InMemory::new());
        let prefix = Path::from("budget");
        runtime
            .block_on(store.put(
                &prefix.clone().join(CONTAINER_OBJECT),
                PutPayload::from(container),
            ))
            .expect("put");
        let store: Arc<dyn ObjectStore> = store;
        let probe = Probe::start();
        let atlas = runtime
            .block_on(Atlas::open(Arc::clone(&store), &prefix))
            .expect("an honest footer opens");
        let heap = probe.finish();
        let budget = atlas.footer_budget();
        let stored = frame.len() as f64;
        println!(
            "| {} | {} | {} | {:.1} | {} | {:.1} | {} | {:.1} | {:.0} % |",
            case.name,
            bytes(frame.len() as u64),
            bytes(msgpack.len() as u64),
            msgpack.len() as f64 / stored,
            bytes(budget.used()),
            budget.used() as f64 / stored,
            bytes(heap.peak as u64),
            heap.peak as f64 / stored,
            100.0 * budget.used() as f64 / budget.limit() as f64,
        );
        assert!(
            heap.peak as u64 <= budget.used() + (1 << 20),
            "{}: the open's peak heap ({}) exceeds what it charged ({}) by more than 1 MiB",
            case.name,
            heap.peak,
            budget.used()
        );
    }
    println!(
        "\nLimit: {} MiB + {} x stored bytes.\n",
        FOOTER_BUDGET_BASE >> 20,
        FOOTER_BUDGET_PER_STORED_BYTE
    );
}

fn main() {
    // `memory_scaling [open] [footer] [writer] [footer-budget]`: the sections to run (all by
    // default).
    let only: Vec<String> = std::env::args().skip(1).collect();
    let run = |section: &str| only.is_empty() || only.iter().any(|s| s == section);
    if run("open") {
        datasetrt_open();
    }
    if run("footer") {
        atlas_footer_decode();
    }
    if run("writer") {
        atlas_writer();
    }
    if run("footer-budget") {
        atlas_footer_budget();
    }
}
