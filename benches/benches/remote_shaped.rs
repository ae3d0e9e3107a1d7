//! Both formats on object storage through a link shaped like S3's from a nearby instance: the
//! loopback S3 test server (`.ci/s3-server.sh`) behind `dsrt-atlas-link-shaper` (20 ms to
//! first byte, 80 MB/s per connection, 400 MB/s in all). Without a server configured the
//! bench prints why and measures nothing.
//!
//! - **Cold epochs by downloads in flight**: an epoch of an 800 MB cache (50 shards of 16 MiB,
//!   `Loader` with 2 workers, every payload consumed) from an empty local cache, with
//!   `prefetch_shards` at 2 to 16 and at its default; throughput against the link's total
//!   cap. Target (object-store issue): the default >= 0.8x the cap. Beside them, what this
//!   machine carries through the same link: the same shards by plain GETs 8 and 16 at once,
//!   and 8 at once each hashed and written as it arrives (the least a cache could do). The
//!   rounds rotate the arms' order, and the figure is each arm's median.
//! - **First sample**: a cold open and the first sample with default options, against the
//!   model the issue gives: time to first byte x the open's round trips (manifest.json, then
//!   index.bin and metadata.arrow together: 2) + one shard at the per-connection cap. Target:
//!   <= 1.2x the model. `cold_open_only` shows the open's round trips.
//! - **Atlas**: open a collection of 2,000 datasets and read one variable of one of them, for
//!   two shapes of dataset (the Python benchmark's three 24 x 32 variables, and one 64 x 64
//!   variable whose segment is too large to keep), against four round trips' worth of time
//!   to first byte. Target: at most that.
//!
//! `cargo bench -p dsrt-atlas-benches --bench remote_shaped [-- ROUNDS]` (default 3).
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // bench code
#![allow(clippy::cast_precision_loss)] // rates

use atlas::ndarray::{ArrayD, IxDyn};
use atlas::store::CountingStore;
use atlas::{ArraySpec, Atlas, AtlasWriter, DatasetSpec, WriterOptions};
use datasetrt::{Dataset, Loader};
use dsrt_atlas_benches::median;
use dsrt_atlas_benches::remote::{
    consume, fixture, fresh_dir, get_all, get_hash_write_all, loader_config, runtime,
    server_or_skip, settle_and_remove, shard_objects, SHARD_BYTES,
};
use dsrt_atlas_link_shaper::{loopback_addr, LinkShape, Shaper};
use dsrt_remote::object_store::aws::AmazonS3Builder;
use dsrt_remote::object_store::{path::Path as StorePath, ObjectStore, ObjectStoreExt};
use dsrt_remote::{open_remote, RemoteOptions, RemotePrefix};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SHAPE: LinkShape = LinkShape::S3_NEARBY;
const ATLAS_DATASETS: usize = 2_000;
/// The shaped epochs' cache: about 800 MB, 50 shards of 16 MiB, so that an epoch is mostly
/// the steady state of downloads in flight rather than its start and end.
const EPOCH_BYTES: u64 = 800 << 20;

/// The test server's address, from `AWS_ENDPOINT_URL` (checked to be loopback by `server`).
fn upstream() -> SocketAddr {
    loopback_addr(&std::env::var("AWS_ENDPOINT_URL").unwrap()).unwrap()
}

/// A client of the bucket that reaches the server through `shaper`, configured from the
/// environment as the cache's own clients are.
fn shaped_store(bucket: &str, shaper: &Shaper) -> Arc<dyn ObjectStore> {
    store(
        bucket,
        AmazonS3Builder::from_env().with_endpoint(shaper.endpoint()),
    )
}

/// A client of the bucket from `builder` (configured from the environment).
fn store(bucket: &str, builder: AmazonS3Builder) -> Arc<dyn ObjectStore> {
    Arc::new(
        builder
            .with_bucket_name(bucket)
            .with_allow_http(true)
            .build()
            .unwrap(),
    )
}

/// One cold epoch of the cache under `remote` into a fresh directory under `root`; its time.
fn cold_epoch(remote: &RemotePrefix, options: &RemoteOptions) -> Duration {
    let started = Instant::now();
    let cache = open_remote(remote, options).unwrap();
    let dataset = Arc::new(Dataset::from_caches(vec![(remote.url().into(), cache)]).unwrap());
    std::hint::black_box(consume(&dataset));
    started.elapsed()
}

/// What a row of the epochs table runs: a cold epoch with `prefetch_shards` at a setting, or
/// a baseline of the same shards' GETs through the same link.
enum Arm {
    Epoch(usize),
    /// Plain GETs into memory, this many at once.
    Gets(usize),
    /// GETs each hashed and written to a file as it arrives, this many at once: the least a
    /// cache could do.
    Floor(usize),
}

/// Where the epochs table's arms run.
struct Link<'a> {
    root: &'a Path,
    remote: &'a RemotePrefix,
    shaper: &'a Shaper,
    objects: &'a [&'a str],
    rt: &'a tokio::runtime::Runtime,
}

impl Link<'_> {
    /// One run of `arm`; its time.
    fn run(&self, arm: &Arm, n: &mut u64) -> f64 {
        let dir = fresh_dir(self.root, n);
        let store = self.remote.store();
        let started = Instant::now();
        match *arm {
            Arm::Epoch(prefetch) => {
                let options = RemoteOptions::new(&dir).prefetch_shards(prefetch);
                cold_epoch(self.remote, &options);
            }
            Arm::Gets(at_once) => get_all(self.rt, &store, self.remote, self.objects, at_once),
            Arm::Floor(at_once) => {
                std::fs::create_dir_all(&dir).unwrap();
                get_hash_write_all(self.rt, &store, self.remote, self.objects, &dir, at_once);
            }
        }
        let time = started.elapsed().as_secs_f64();
        settle_and_remove(&dir);
        time
    }
}

fn epochs(link: &Link<'_>, n: &mut u64, rounds: usize, shard_bytes: u64) {
    let default = RemoteOptions::new(link.root).prefetch_shards;
    let mut arms: Vec<(String, Arm)> = [2, 4, 6, 8, 12, 16]
        .into_iter()
        .map(|k| (format!("epoch, prefetch_shards {k}"), Arm::Epoch(k)))
        .collect();
    arms.push((format!("epoch, default ({default})"), Arm::Epoch(default)));
    for k in [8, 16] {
        arms.push((format!("baseline: plain GETs, {k} at once"), Arm::Gets(k)));
    }
    arms.push(("floor: GET + hash + write, 8 at once".into(), Arm::Floor(8)));
    let mut times = vec![Vec::new(); arms.len()];
    let mut peaks = vec![0u64; arms.len()];
    for round in 0..rounds {
        for k in 0..arms.len() {
            let which = (round + k) % arms.len();
            link.shaper.reset_peak();
            times[which].push(link.run(&arms[which].1, n));
            peaks[which] = peaks[which].max(link.shaper.stats().peak_in_flight);
        }
    }
    println!(
        "\nCold epochs through the shaper ({:.0} MB of shards, {rounds} rounds):\n",
        shard_bytes as f64 / 1e6
    );
    println!("| arm | median time | throughput | ratio to the cap | most requests in flight |");
    println!("|---|---|---|---|---|");
    for (k, (name, _)) in arms.iter().enumerate() {
        let time = median(&mut times[k]);
        let rate = shard_bytes as f64 / time;
        println!(
            "| {name} | {:.0} ms | {:.0} MB/s | {:.2} | {} |",
            time * 1e3,
            rate / 1e6,
            rate / SHAPE.total,
            peaks[k]
        );
    }
}

fn first_sample(root: &Path, n: &mut u64, remote: &RemotePrefix, rounds: usize) {
    let rtt = SHAPE.first_byte.as_secs_f64();
    let model = 2.0 * rtt + SHARD_BYTES as f64 / SHAPE.per_connection;
    let (mut opens, mut firsts) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(5) {
        let dir = fresh_dir(root, n);
        let started = Instant::now();
        let cache = open_remote(remote, &RemoteOptions::new(&dir)).unwrap();
        opens.push(started.elapsed().as_secs_f64());
        drop(cache);
        settle_and_remove(&dir);

        let dir = fresh_dir(root, n);
        let started = Instant::now();
        let cache = open_remote(remote, &RemoteOptions::new(&dir)).unwrap();
        let dataset = Arc::new(Dataset::from_caches(vec![(remote.url().into(), cache)]).unwrap());
        let mut loader = Loader::new(Arc::clone(&dataset), loader_config()).unwrap();
        std::hint::black_box(loader.next().unwrap().unwrap().payload);
        firsts.push(started.elapsed().as_secs_f64());
        drop(loader);
        drop(dataset);
        settle_and_remove(&dir);
    }
    let (open, first) = (median(&mut opens), median(&mut firsts));
    println!("\nFirst sample through the shaper (model: 2 x {:.0} ms + {:.0} ms for one shard = {:.0} ms):\n", rtt * 1e3, (model - 2.0 * rtt) * 1e3, model * 1e3);
    println!("| measure | median | round trips' worth | ratio to the model |");
    println!("|---|---|---|---|");
    println!(
        "| cold_open_only | {:.1} ms | {:.2} | - |",
        open * 1e3,
        open / rtt
    );
    println!(
        "| cold_open_first_sample | {:.1} ms | {:.2} | {:.2} |",
        first * 1e3,
        first / rtt,
        first / model
    );
}

/// The collections the Atlas rows read: the Python benchmark's shape (three 24 x 32 f32
/// variables per dataset: each segment about 6 MB, fetched whole by its first read) and a
/// larger one (a 64 x 64 `temperature`, about 27 MB: its first read fetches the segment's
/// tail, then one 8 MiB block).
#[derive(Clone, Copy)]
enum AtlasShape {
    Small,
    Large,
}

impl AtlasShape {
    fn name(self) -> &'static str {
        match self {
            Self::Small => "three 24 x 32 f32 variables",
            Self::Large => "a 64 x 64 f32 variable",
        }
    }

    fn spec(self, i: usize) -> DatasetSpec {
        let ramp = |n: usize, base: f32| -> Vec<f32> {
            (0..n).map(|k| base + k as f32 / n as f32).collect()
        };
        let spec = DatasetSpec::new(format!("station_{i:06}")).attr("index", i as i64);
        match self {
            Self::Small => {
                ["t2m", "precip", "wind"]
                    .into_iter()
                    .enumerate()
                    .fold(spec, |spec, (v, name)| {
                        let data = ramp(24 * 32, (i * 3 + v) as f32);
                        let data = ArrayD::from_shape_vec(IxDyn(&[24, 32]), data).unwrap();
                        spec.array(ArraySpec::new(name, data).dims(["y", "x"]))
                    })
            }
            Self::Large => {
                let data = ArrayD::from_shape_vec(IxDyn(&[64, 64]), ramp(64 * 64, i as f32));
                spec.array(ArraySpec::new("temperature", data.unwrap()).dims(["y", "x"]))
            }
        }
    }

    /// The variable a read takes, and its element count.
    fn variable(self) -> (&'static str, usize) {
        match self {
            Self::Small => ("precip", 24 * 32),
            Self::Large => ("temperature", 64 * 64),
        }
    }

    fn prefix(self) -> StorePath {
        let tag = match self {
            Self::Small => "small",
            Self::Large => "large",
        };
        StorePath::from(format!(
            "remote-shaped-bench/atlas-{ATLAS_DATASETS}-{tag}-v1"
        ))
    }
}

/// The collection of `shape` (written unless it is there).
fn atlas_fixture(rt: &tokio::runtime::Runtime, store: &Arc<dyn ObjectStore>, shape: AtlasShape) {
    let prefix = shape.prefix();
    if rt
        .block_on(store.head(&prefix.clone().join("data.atlas")))
        .is_ok()
    {
        return;
    }
    let started = Instant::now();
    let mut writer = AtlasWriter::new(Arc::clone(store), &prefix, WriterOptions::default());
    for i in 0..ATLAS_DATASETS {
        writer.write_dataset(shape.spec(i)).unwrap();
    }
    rt.block_on(writer.finish()).unwrap();
    eprintln!(
        "remote_shaped bench: wrote {prefix} in {:.1?}",
        started.elapsed()
    );
}

fn atlas(bucket: &str, shaper: &Shaper, rounds: usize) {
    let rt = runtime();
    let direct = store(bucket, AmazonS3Builder::from_env());
    let rtt = SHAPE.first_byte.as_secs_f64();
    println!(
        "\nAtlas through the shaper ({ATLAS_DATASETS} datasets; open, then one variable of one \
         dataset; a fresh client each time):\n"
    );
    println!(
        "| datasets of | open | open + read | requests | round trips (reads) | bytes received | \
         open + read in round trips' worth | ratio to 4 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for shape in [AtlasShape::Small, AtlasShape::Large] {
        atlas_fixture(&rt, &direct, shape);
        let prefix = shape.prefix();
        let (variable, elements) = shape.variable();
        let (mut times, mut opens, mut requests, mut bytes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut reads = 0;
        for round in 0..rounds.max(5) {
            let counting = CountingStore::new(shaped_store(bucket, shaper));
            let before = shaper.stats();
            let name = format!("station_{:06}", (round * 7_919 + 1_234) % ATLAS_DATASETS);
            let started = Instant::now();
            let (values, opened) = rt.block_on(async {
                let atlas = Atlas::open(Arc::new(counting.clone()), &prefix)
                    .await
                    .unwrap();
                let opened = started.elapsed();
                let view = atlas.dataset(&name).unwrap();
                let values = view.read_array::<f32>(variable, vec![], vec![]).await;
                (values.unwrap(), opened)
            });
            times.push(started.elapsed().as_secs_f64());
            opens.push(opened.as_secs_f64());
            let after = shaper.stats();
            requests.push(after.requests - before.requests);
            bytes.push(after.bytes_down - before.bytes_down);
            reads = reads.max(counting.reads());
            assert_eq!(values.len(), elements);
        }
        let (time, open) = (median(&mut times), median(&mut opens));
        println!(
            "| {} | {:.1} ms | {:.1} ms | {} | {reads} | {} | {:.2} | {:.2} |",
            shape.name(),
            open * 1e3,
            time * 1e3,
            requests.iter().max().unwrap(),
            bytes.iter().max().unwrap(),
            time / rtt,
            time / (4.0 * rtt)
        );
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3);
    let Some(bucket) = server_or_skip("remote_shaped") else {
        return;
    };
    let shaper = Shaper::start(upstream(), SHAPE).unwrap();
    println!(
        "Link: {:.0} ms to first byte, {:.0} MB/s per connection, {:.0} MB/s in all.",
        SHAPE.first_byte.as_secs_f64() * 1e3,
        SHAPE.per_connection / 1e6,
        SHAPE.total / 1e6
    );
    let (copy, remote) = fixture(&bucket, EPOCH_BYTES);
    let shaped = RemotePrefix::new(
        shaped_store(&bucket, &shaper),
        remote.prefix().clone(),
        format!("{} (shaped)", remote.url()),
    );
    let shard_bytes: u64 = shard_objects(&copy)
        .iter()
        .map(|s| std::fs::metadata(copy.join(s)).unwrap().len())
        .sum();
    let work = tempfile::tempdir().unwrap();
    let mut n = 0;
    // One untimed epoch: the server's caches and the client's connections warm.
    let dir = fresh_dir(work.path(), &mut n);
    cold_epoch(&shaped, &RemoteOptions::new(&dir));
    settle_and_remove(&dir);
    let shards = shard_objects(&copy);
    let objects: Vec<&str> = shards.iter().map(String::as_str).collect();
    let rt = runtime();
    let link = Link {
        root: work.path(),
        remote: &shaped,
        shaper: &shaper,
        objects: &objects,
        rt: &rt,
    };
    epochs(&link, &mut n, rounds, shard_bytes);
    first_sample(work.path(), &mut n, &shaped, rounds);
    atlas(&bucket, &shaper, rounds);
}
