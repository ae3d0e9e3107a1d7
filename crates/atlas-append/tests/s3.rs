//! Growing collections on the S3 test server: 16 processes appending 50 datasets each to one
//! collection at once lose nothing (the manifest commits with `If-None-Match: *` /
//! `If-Match`, a lost race retried after catching up), and every dataset reads back as
//! written; deleters racing across parts lose nothing (each part's mask commits with
//! conditional PUT); gc removes exactly a part no version names; a compaction is byte for byte
//! a fresh write; and, through a link shaped like S3's (`dsrt-atlas-link-shaper`), a 64-part
//! collection opens by its manifest in its two rounds of requests and reads one variable of
//! one dataset about as fast as its compacted form. Ignored unless `--ignored`: it needs the
//! S3 test server (`cargo xtask test`, or `bash .ci/s3-server.sh start DIR` and
//! `source DIR/env`).
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::print_stdout
)] // test code: reports figures

mod common;

use atlas_reader::Atlas;
use common::*;
use dsrt_atlas_test_runner as runner;
use object_access::StoreLocation;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

const PROCESSES: usize = 16;
const PER_PROCESS: usize = 50;

fn main() -> ExitCode {
    if std::env::var(CHILD_LOCATION).is_ok() {
        child_append();
        return ExitCode::SUCCESS;
    }
    runner::run_ignored(
        &[
            (
                "sixteen_processes_appending_at_once_on_s3_lose_nothing",
                sixteen_processes_appending_at_once_on_s3_lose_nothing,
            ),
            (
                "racing_deletes_across_parts_on_s3_lose_nothing",
                racing_deletes_across_parts_on_s3_lose_nothing,
            ),
            (
                "gc_on_s3_removes_exactly_an_unreferenced_part",
                gc_on_s3_removes_exactly_an_unreferenced_part,
            ),
            (
                "compaction_on_s3_is_byte_identical_to_a_fresh_write",
                compaction_on_s3_is_byte_identical_to_a_fresh_write,
            ),
            (
                "sixty_four_parts_through_an_s3_shaped_link",
                sixty_four_parts_through_an_s3_shaped_link,
            ),
        ],
        "needs the S3 test server; cargo xtask test runs them",
    )
}

fn url(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. Run \
             `cargo xtask test`, or `bash .ci/s3-server.sh start DIR` and `source DIR/env` first."
        );
    };
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        endpoint.starts_with("http://127.0.0.1") || endpoint.starts_with("http://localhost"),
        "AWS_ENDPOINT_URL ('{endpoint}') is not on loopback; these tests only talk to a local server"
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "s3://{bucket}/atlas-append-tests/{test}-{}-{nanos}",
        std::process::id()
    )
}

fn sixteen_processes_appending_at_once_on_s3_lose_nothing() {
    let url = url("sixteen_processes");
    let location = StoreLocation::parse(&url).unwrap();
    let rt = runtime();
    rt.block_on(append(&location, 99, 10));
    let results = append_in_processes(&url, 0..PROCESSES, PER_PROCESS);
    let versions: BTreeSet<u64> = results.iter().map(|(v, _)| *v).collect();
    assert_eq!(versions, (2..=PROCESSES as u64 + 1).collect());
    let retried = results.iter().filter(|(_, a)| *a > 1).count();
    println!("  {PROCESSES} appenders on S3: {retried} retried after a conflict");
    rt.block_on(async {
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.version(), Some(PROCESSES as u64 + 1));
        let mut expected: BTreeSet<String> = (0..10).map(|i| name(99, i)).collect();
        for writer in 0..PROCESSES {
            expected.extend((0..PER_PROCESS).map(|i| name(writer, i)));
        }
        assert_eq!(expected.len(), 10 + 800);
        assert_eq!(names(&atlas), expected);
        check_contents(&atlas).await;
    });
}

fn racing_deletes_across_parts_on_s3_lose_nothing() {
    const DELETERS: usize = 6;
    let url = url("racing_deletes");
    let location = StoreLocation::parse(&url).unwrap();
    let rt = runtime();
    rt.block_on(async {
        for writer in 0..3 {
            append(&location, writer, 4).await;
        }
    });
    let all: Vec<String> = (0..3)
        .flat_map(|w| (0..4).map(move |i| name(w, i)))
        .collect();
    // Tasks on one runtime (a store's connections belong to the runtime that made them),
    // each with its own open, released together.
    let barrier = tokio::sync::Barrier::new(DELETERS);
    rt.block_on(futures::future::join_all((0..DELETERS).map(|d| {
        let (all, barrier, location) = (&all, &barrier, &location);
        async move {
            // Names `d`, `d + 6`: two parts per deleter, no name shared.
            let names: Vec<&String> = all.iter().skip(d).step_by(DELETERS).collect();
            let atlas = Atlas::open_location(location, |s| s).await.unwrap();
            barrier.wait().await;
            let report = atlas.delete(&names).await.unwrap();
            assert_eq!(report.newly_deleted, names.len());
        }
    })));
    rt.block_on(async {
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.dataset_count(), 0, "left: {:?}", names(&atlas));
    });
}

fn gc_on_s3_removes_exactly_an_unreferenced_part() {
    use atlas_append::{collect_garbage, GcOptions};
    use object_store::ObjectStoreExt;
    let url = url("gc");
    let location = StoreLocation::parse(&url).unwrap();
    let remote = location.as_remote().unwrap().clone();
    let rt = runtime();
    rt.block_on(async {
        append(&location, 0, 3).await;
        append(&location, 1, 3).await;
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        let store = remote.store();
        let part = &atlas.commits()[0].part;
        let bytes = store
            .get(&remote.object(&format!("parts/{part}/data.atlas")))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let orphan = remote.object("parts/orphan/data.atlas");
        store.put(&orphan, bytes.into()).await.unwrap();
        let careful = collect_garbage(&location, &GcOptions::default())
            .await
            .unwrap();
        assert_eq!(careful.young_parts, ["orphan"]);
        let options = GcOptions {
            grace: std::time::Duration::ZERO,
            ..GcOptions::default()
        };
        let report = collect_garbage(&location, &options).await.unwrap();
        assert_eq!(report.removed_parts, ["orphan"]);
        assert!(store.head(&orphan).await.is_err());
        let after = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(names(&after), names(&atlas));
        check_contents(&after).await;
    });
}

fn compaction_on_s3_is_byte_identical_to_a_fresh_write() {
    use atlas_writer::{AtlasWriter, WriterOptions};
    use object_store::ObjectStoreExt;
    let url = url("compact");
    let location = StoreLocation::parse(&url).unwrap();
    let remote = location.as_remote().unwrap().clone();
    let rt = runtime();
    rt.block_on(async {
        for writer in 0..5 {
            append(&location, writer, 4).await;
        }
        let gone = [name(0, 1), name(2, 0), name(4, 3)];
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        atlas.delete(&gone).await.unwrap();
        let live: Vec<(usize, String)> = (0..5)
            .flat_map(|w| (0..4).map(move |i| (w, name(w, i))))
            .filter(|(_, n)| !gone.contains(n))
            .collect();

        let report = atlas_append::compact(&location, &mut |_, _| {})
            .await
            .unwrap();
        assert_eq!((report.version, report.datasets), (6, live.len()));
        let compacted = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(compacted.part_commits().len(), 1);
        let created = compacted.parts().next().unwrap().1.footer().created_unix_ms;
        check_contents(&compacted).await;

        let store = remote.store();
        let mut fresh = AtlasWriter::new(
            store.clone(),
            &remote.object("fresh"),
            WriterOptions {
                created_unix_ms: created,
                ..WriterOptions::default()
            },
        );
        for (writer, name) in &live {
            fresh.write_dataset(dataset(name, *writer)).unwrap();
        }
        fresh.finish().await.unwrap();
        let get = |path: String| {
            let store = store.clone();
            let object = remote.object(&path);
            async move { store.get(&object).await.unwrap().bytes().await.unwrap() }
        };
        let part = get(format!("parts/{}/data.atlas", report.part)).await;
        let written = get("fresh/data.atlas".to_owned()).await;
        assert!(
            part == written,
            "the compacted part differs from a fresh write"
        );
    });
}

/// Parts of the shaped test's growing collection.
const SHAPED_PARTS: usize = 64;
/// Datasets per part: 1,984 in all, the reader's shaped test's 2,000 or so.
const SHAPED_PER_PART: usize = 31;

/// Dataset `d` of the shaped test: the reader's shaped test's three `[24, 32]` `f32`
/// variables (the Python benchmark's shape), values derived from `d` and the variable.
fn shaped_dataset(d: usize) -> atlas_writer::DatasetSpec {
    use atlas_writer::{ArraySpec, DatasetSpec};
    use ndarray::{ArrayD, IxDyn};
    ["t2m", "precip", "wind"].into_iter().enumerate().fold(
        DatasetSpec::new(format!("run_{d:05}")),
        |spec, (v, name)| {
            let values = (0..24 * 32)
                .map(|i| (d * 3 + v) as f32 + i as f32 * 1e-3)
                .collect();
            let data = ArrayD::from_shape_vec(IxDyn(&[24, 32]), values).unwrap();
            spec.array(ArraySpec::new(name, data).dims(["y", "x"]))
        },
    )
}

/// Appends datasets `range` of the shaped test to `location` as one part.
async fn append_shaped(location: &StoreLocation, range: std::ops::Range<usize>) {
    let mut appender =
        atlas_append::Appender::open(location, atlas_writer::WriterOptions::default())
            .await
            .unwrap();
    for d in range {
        appender.write_dataset(shaped_dataset(d)).unwrap();
    }
    appender.commit().await.unwrap();
}

/// A client of the test bucket whose requests go to `endpoint` (the shaper's): a fresh one
/// per attempt, so no connection or cached byte carries over.
fn s3_client(endpoint: &str) -> std::sync::Arc<dyn object_store::ObjectStore> {
    use object_store::{BackoffConfig, ClientOptions, RetryConfig};
    let bucket = std::env::var("ATLAS_S3_TEST_BUCKET").unwrap();
    let store = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_endpoint(endpoint)
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_connect_timeout(std::time::Duration::from_secs(5))
                .with_timeout(std::time::Duration::from_secs(60)),
        )
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: std::time::Duration::from_millis(20),
                max_backoff: std::time::Duration::from_millis(500),
                base: 2.0,
            },
            max_retries: 2,
            retry_timeout: std::time::Duration::from_secs(10),
        })
        .build()
        .unwrap();
    std::sync::Arc::new(store)
}

/// What one open + read through the shaper cost.
#[derive(Debug, Clone)]
struct Shaped {
    open: std::time::Duration,
    read: std::time::Duration,
    /// The open's requests, in the order they were sent.
    requests: Vec<atlas_store::Request>,
    /// The open's reads (`CountingStore::reads`).
    reads: usize,
    /// Bytes the link carried to the client during the open.
    open_bytes: u64,
    /// The most requests in flight at once during the open.
    open_peak: u64,
    /// The read's reads (the parts of one read counted once).
    read_reads: usize,
    /// Bytes the link carried to the client during the read.
    read_bytes: u64,
    /// The same open again on the same client, its connections open.
    warm_open: std::time::Duration,
}

/// The link's counts once every response byte so far has been counted: a client can finish
/// reading a response before the shaper's pump adds its last piece to the count.
async fn settled_stats(
    shaper: &dsrt_atlas_link_shaper::Shaper,
) -> dsrt_atlas_link_shaper::LinkStats {
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    shaper.stats()
}

/// Opens the collection at `url` by its manifest (`<url>/collection.manifest`: two round
/// trips, `docs/format/growing.md`, "Reading") through a fresh client of `shaper`, checks
/// that the open asked for the manifest and then for each part's tail probe and mask, once
/// each, and reads variable `precip` of dataset `d`, checking its values.
async fn open_and_read_shaped(
    shaper: &dsrt_atlas_link_shaper::Shaper,
    url: &str,
    d: usize,
) -> Shaped {
    let counting = atlas_store::CountingStore::new(s3_client(&shaper.endpoint()));
    let wrapped: std::sync::Arc<dyn object_store::ObjectStore> =
        std::sync::Arc::new(counting.clone());
    let location = StoreLocation::parse(&format!("{url}/collection.manifest")).unwrap();
    let before = settled_stats(shaper).await;
    shaper.reset_peak();
    let started = std::time::Instant::now();
    let again = std::sync::Arc::clone(&wrapped);
    let atlas = Atlas::open_location(&location, |_| wrapped).await.unwrap();
    let open = started.elapsed();
    let after_open = settled_stats(shaper).await;
    let (requests, reads) = (counting.requests(), counting.reads());
    assert_eq!(requests.len(), counting.count());
    let started = std::time::Instant::now();
    let values = atlas
        .dataset(&format!("run_{d:05}"))
        .unwrap()
        .read_array::<f32>("precip", vec![], vec![])
        .await
        .unwrap();
    let read = started.elapsed();
    let after_read = settled_stats(shaper).await;
    let read_reads = counting.reads() - reads;
    let started = std::time::Instant::now();
    Atlas::open_location(&location, |_| again).await.unwrap();
    let warm_open = started.elapsed();
    check_open_requests(&atlas, &requests);
    assert_eq!(values.shape(), &[24, 32]);
    assert_eq!(values[[0, 0]], (d * 3 + 1) as f32);
    Shaped {
        open,
        read,
        requests,
        reads,
        open_bytes: after_open.bytes_down - before.bytes_down,
        open_peak: after_open.peak_in_flight,
        read_reads,
        read_bytes: after_read.bytes_down - after_open.bytes_down,
        warm_open,
    }
}

/// Checks that `requests` are the open of a growing collection by its manifest: the
/// manifest first, then each part's tail probe and mask, once each, and nothing else.
fn check_open_requests(atlas: &Atlas, requests: &[atlas_store::Request]) {
    use atlas_store::RequestKind;
    use object_store::GetRange;
    let (first, rest) = requests.split_first().unwrap();
    assert_eq!(first.kind, RequestKind::Get, "{requests:?}");
    assert!(first.path.ends_with("/collection.manifest"), "{requests:?}");
    let mut expected: Vec<(String, RequestKind)> = atlas
        .part_commits()
        .iter()
        .flat_map(|commit| {
            let part = format!("/parts/{}/", commit.part);
            [
                (
                    format!("{part}data.atlas"),
                    RequestKind::GetRange(GetRange::Suffix(atlas_footer::TAIL_PROBE)),
                ),
                (format!("{part}deleted.mask"), RequestKind::Get),
            ]
        })
        .collect();
    assert_eq!(rest.len(), expected.len(), "{requests:?}");
    for request in rest {
        let at = expected
            .iter()
            .position(|(path, kind)| request.path.ends_with(path.as_str()) && request.kind == *kind)
            .unwrap_or_else(|| panic!("an unexpected request {request:?} in {requests:?}"));
        expected.swap_remove(at);
    }
}

/// The same requests as the open of the collection at `url` by its manifest, made bare
/// through a fresh client of `shaper`: the manifest, then every part's tail probe and mask at
/// once, nothing decoded. What two round trips and the open's bytes cost on this link and
/// this machine (the server and the shaper share its two cores with the client), on new
/// connections and then again on the same client's open ones.
async fn bare_open_shaped(
    shaper: &dsrt_atlas_link_shaper::Shaper,
    url: &str,
) -> (std::time::Duration, std::time::Duration) {
    use object_store::{GetOptions, GetRange, ObjectStoreExt};
    let store = s3_client(&shaper.endpoint());
    let location = StoreLocation::parse(url).unwrap();
    let prefix = location.as_remote().unwrap().prefix().clone();
    let mut times = Vec::new();
    // Twice on the same client: the second time its connections are open.
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let manifest = atlas_reader::read_manifest(store.as_ref(), &prefix)
            .await
            .unwrap()
            .unwrap();
        let parts = manifest.parts_of(manifest.latest());
        let tails = parts.iter().map(|commit| {
            let store = &store;
            let container = atlas_reader::part_prefix(&prefix, &commit.part).join("data.atlas");
            async move {
                let options = GetOptions {
                    range: Some(GetRange::Suffix(atlas_footer::TAIL_PROBE)),
                    ..GetOptions::default()
                };
                let result = store.get_opts(&container, options).await.unwrap();
                result.bytes().await.unwrap().len()
            }
        });
        let masks = parts.iter().map(|commit| {
            let store = &store;
            let mask = atlas_reader::part_prefix(&prefix, &commit.part).join("deleted.mask");
            async move { store.get(&mask).await.is_err() }
        });
        let (tails, masks) = futures::join!(
            futures::future::join_all(tails),
            futures::future::join_all(masks)
        );
        times.push(started.elapsed());
        assert_eq!((tails.len(), masks.len()), (SHAPED_PARTS, SHAPED_PARTS));
        assert!(masks.iter().all(|absent| *absent), "no part has deletes");
    }
    (times[0], times[1])
}

/// A growing collection of 64 parts (31 datasets each, 1,984 in all) and its compacted form
/// on the S3 test server, through a link shaped like S3 from a nearby instance, three
/// attempts each with fresh clients, printing what the targets ask (`docs/benchmarks.md`,
/// "Reading a growing collection through an S3-shaped link"):
///
/// - the open of the 64 parts by the manifest's location is `1 + 2 x 64` requests, the
///   manifest and then every part's tail probe and mask at once, in at least two round trips'
///   time and at most 2x the same requests made bare (median);
/// - open + the first read of one variable of one dataset: the same round trips as on the
///   compacted collection and at most 1.2x its cost on the link's model, and the read alone
///   measured at most 1.2x the compacted one's.
///
/// The link is `LinkShape::S3_NEARBY` itself (20 ms to first byte, 80 MB/s per connection,
/// 400 MB/s in all), the shape the targets name: the tests of this binary run one at a time,
/// so none shares the link or the server with it (the reader's shaped test slows one
/// connection to 10 MB/s because its file's tests run at once).
fn sixty_four_parts_through_an_s3_shaped_link() {
    use dsrt_atlas_link_shaper::{loopback_addr, LinkShape, Shaper};
    let growing_url = url("shaped_growing");
    let compacted_url = url("shaped_compacted");
    let growing = StoreLocation::parse(&growing_url).unwrap();
    let compacted = StoreLocation::parse(&compacted_url).unwrap();
    let rt = runtime();
    rt.block_on(async {
        for part in 0..SHAPED_PARTS {
            append_shaped(
                &growing,
                part * SHAPED_PER_PART..(part + 1) * SHAPED_PER_PART,
            )
            .await;
        }
        // The compacted form: the same datasets in the same order, then `compact`. Its part
        // is a fresh write of them whatever parts they came in, so two appends will do.
        let all = SHAPED_PARTS * SHAPED_PER_PART;
        append_shaped(&compacted, 0..all / 2).await;
        append_shaped(&compacted, all / 2..all).await;
        atlas_append::compact(&compacted, &mut |_, _| {})
            .await
            .unwrap();
    });
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap();
    let shape = LinkShape::S3_NEARBY;
    let shaper = Shaper::start(loopback_addr(&endpoint).unwrap(), shape).unwrap();
    // Per attempt: the open over the link's model and over the bare rounds; open + read,
    // growing over compacted, measured and as the link's model has it; the read alone,
    // growing over compacted.
    let mut ratios: [Vec<f64>; 5] = Default::default();
    for attempt in 0..3 {
        // A dataset of a middle part, another each attempt.
        let d = 32 * SHAPED_PER_PART + 7 + attempt;
        // Which collection goes first takes turns, so neither always finds the server warm;
        // the bare rounds go just before the growing open.
        let (g, c, (bare, bare_warm)) = rt.block_on(async {
            if attempt % 2 == 0 {
                let bare = bare_open_shaped(&shaper, &growing_url).await;
                let g = open_and_read_shaped(&shaper, &growing_url, d).await;
                let c = open_and_read_shaped(&shaper, &compacted_url, d).await;
                (g, c, bare)
            } else {
                let c = open_and_read_shaped(&shaper, &compacted_url, d).await;
                let bare = bare_open_shaped(&shaper, &growing_url).await;
                let g = open_and_read_shaped(&shaper, &growing_url, d).await;
                (g, c, bare)
            }
        });
        // The link's model: its round trips, and the bytes at the link's total rate (many
        // responses share it at once; the largest of the open's is one 64 KiB probe, under a
        // millisecond at one connection's rate). An open by the manifest is two round trips
        // and the first read of a variable one more, for either collection.
        let rate = |bytes: u64| std::time::Duration::from_secs_f64(bytes as f64 / shape.total);
        let model = 2 * shape.first_byte + rate(g.open_bytes);
        let growing_model = 3 * shape.first_byte + rate(g.open_bytes + g.read_bytes);
        let compacted_model = 3 * shape.first_byte + rate(c.open_bytes + c.read_bytes);
        let (growing_total, compacted_total) = (g.open + g.read, c.open + c.read);
        let secs = |d: std::time::Duration| d.as_secs_f64();
        let attempt_ratios = [
            secs(g.open) / secs(model),
            secs(g.open) / secs(bare),
            secs(growing_total) / secs(compacted_total),
            secs(growing_model) / secs(compacted_model),
            secs(g.read) / secs(c.read),
        ];
        for (all, ratio) in ratios.iter_mut().zip(attempt_ratios) {
            all.push(ratio);
        }
        println!(
            "  attempt {attempt}: 64 parts: open {:?} ({} requests, {} reads, {} bytes down, \
             {} in flight at most; / 2 round trips + transfer {model:?}: {:.2}; / the same \
             requests bare {bare:?}: {:.2}; on open connections {:?}, bare {bare_warm:?}), \
             read {:?} ({} bytes); compacted: open {:?} \
             ({} requests, {} bytes), read {:?} ({} bytes); open + read, growing / \
             compacted: {:.3} (the link's model: {:.3}); the read alone: {:.3}",
            g.open,
            g.requests.len(),
            g.reads,
            g.open_bytes,
            g.open_peak,
            attempt_ratios[0],
            attempt_ratios[1],
            g.warm_open,
            g.read,
            g.read_bytes,
            c.open,
            c.requests.len(),
            c.open_bytes,
            c.read,
            c.read_bytes,
            attempt_ratios[2],
            attempt_ratios[3],
            attempt_ratios[4],
        );
        // The open by the manifest: the manifest, then each part's tail and mask (checked
        // request by request above), one read each: 1 + 2 x 64. The compacted collection
        // is one part: 3. Then the first read of a variable is one read on either (the
        // part's whole segment; the compacted segment in parts, fetched at once).
        assert_eq!(g.requests.len(), 1 + 2 * SHAPED_PARTS);
        assert_eq!(g.reads, 1 + 2 * SHAPED_PARTS);
        assert_eq!(c.requests.len(), 3);
        assert_eq!((g.read_reads, c.read_reads), (1, 1));
        // The parts' requests went at once: opened one part after another, at most a
        // part's two would be in flight; in waves of 8 parts, 16.
        assert!(g.open_peak > 16, "{} in flight at most", g.open_peak);
        // Two round trips are the least the open can take on this link (the shaper holds
        // every response for its first byte): anything faster means it was not shaped.
        assert!(g.open >= 2 * shape.first_byte, "open in {:?}", g.open);
        // On the link's model, open + read of one variable of one dataset costs the growing
        // collection at most 1.2x what it costs the compacted one: the same three round
        // trips, and its 64 tail probes (4.3 MB) against the compacted segment (4.9 MB).
        // What this machine adds to the parts' 128 requests is not in it (see below).
        assert!(
            attempt_ratios[3] <= 1.2,
            "open + read on the link's model: growing {growing_model:?}, compacted \
             {compacted_model:?}"
        );
        // Measured: the read alone costs the growing collection no more than 1.2x the
        // compacted one's (a part's segment of 31 datasets against one of 1,984).
        assert!(
            g.read.as_secs_f64() <= 1.2 * c.read.as_secs_f64(),
            "read: growing {:?}, compacted {:?}",
            g.read,
            c.read
        );
    }
    let median = |all: &mut Vec<f64>| {
        all.sort_by(f64::total_cmp);
        all[all.len() / 2]
    };
    let [model, bare, measured, modelled, read] = ratios.each_mut().map(median);
    println!(
        "  medians of 3: 64-part open / (2 round trips + transfer) {model:.2}, / the same \
         requests bare {bare:.2}; open + read, growing / compacted {measured:.3} (the link's \
         model: {modelled:.3}); the read alone {read:.3}"
    );
    // Measured, the open takes at most two round trips plus the transfer as this machine
    // carries them. The S3 test server, the shaper and the client share its two cores, and
    // a round of 128 requests costs them far more than the link's model (50-80 ms straight to
    // the server, unshaped, in a release build; S3 serves requests on its own machines,
    // within its time to first byte), while the reader's own work is small (the whole open
    // of these 64 parts from memory takes about 2 ms in a release build). So the same
    // requests are made bare in each attempt (through the same link, a fresh client, nothing
    // decoded), and the median open may take 2x the median of those: on this machine, shared
    // with other work, single opens of 0.44x to 2.7x their attempt's bare rounds were seen,
    // medians 0.70x to 1.79x. Parts opened one after another (64 round trips, over 1.3 s)
    // fail it many times over; a few at a time fail the count of requests in flight above.
    assert!(
        bare <= 2.0,
        "the open of 64 parts / the same requests bare, per attempt: {:?}",
        ratios[1]
    );
}
