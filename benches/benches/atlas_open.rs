//! `Atlas::open` at 1,000, 10,000 and 100,000 datasets, and lookup by name at 100,000.
//!
//! Open: an `InMemory` store holding a collection written by `AtlasWriter` (one
//! `temperature` f32[24] per dataset, names `station_NNNNNN_2024`, no `deleted.mask`).
//! `atlas_open` is the whole `Atlas::open`: the suffix GET of the last 64 KiB (a second range
//! GET would follow for a footer larger than that, but these sequential names compress so well
//! that even the 100,000-dataset footer is 41 KB, so every size opens in two requests), the GET
//! of `deleted.mask` (absent here), trailer and header checks, footer decode and validation,
//! and building the `Atlas` (mask set, segment cells, block cache).
//!
//! Baseline, `baseline_reads_decode_validate`: the same requests for the same byte ranges
//! (located once, outside the timing; checked with a `CountingStore` to be exactly the
//! requests `Atlas::open` makes), then `wire::decode_and_validate` of the footer bytes, and
//! nothing else. That is the floor an open cannot go below without changing the format: it
//! must fetch those bytes and it must decode and validate the footer before serving a lookup.
//! The ratio therefore isolates what `Atlas::open` adds on top (trailer parse, locating the
//! footer, the mask path, constructing the `Atlas`). Bare reads alone would be a dishonest
//! baseline on `InMemory`, where a GET costs about half a microsecond: they are shown as a
//! reference line, `reads_only`, not used as the baseline.
//!
//! Lookup: `Atlas::dataset(name)` for 1,000 existing names drawn at random
//! ([`SplitMix`]) from the 100,000, and for 1,000 absent names (`station_NNNNNN_2025`). The
//! baseline is a std `HashMap<String, u32>` (SipHash) from each name to its ordinal, asked
//! `get` for the same names. Both sides return the ordinal, summed so nothing is optimised away.
//!
//! `ATLAS_BENCH_CLOCK=cpu` times with process CPU time instead of the wall clock (see
//! `dsrt_atlas_benches::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // small known sizes

use atlas::format::trailer::{locate_footer, parse_trailer};
use atlas::format::{wire, CONTAINER_OBJECT, MASK_OBJECT, TAIL_PROBE};
use atlas::object_store::memory::InMemory;
use atlas::object_store::path::Path;
use atlas::object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use atlas::store::CountingStore;
use atlas::Atlas;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsrt_atlas_benches::atlas::{runtime, station_name, time_iters, write_station_collection};
use dsrt_atlas_benches::SplitMix;
use std::collections::HashMap;
use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;

/// Where the footer sits in a container, found once outside the timing.
struct FooterPlace {
    /// Absolute byte range of the footer frame.
    footer: Range<u64>,
    /// The container's size.
    size: u64,
    /// Where segments end (the footer's first byte).
    segments_end: u64,
}

async fn locate(store: &dyn ObjectStore, container: &Path) -> FooterPlace {
    let size = store.head(container).await.expect("container exists").size;
    let tail = store
        .get_range(container, size - 16..size)
        .await
        .expect("trailer reads");
    let trailer = parse_trailer(&tail).expect("trailer parses");
    let location = locate_footer(size, trailer).expect("footer located");
    FooterPlace {
        footer: location.footer,
        size,
        segments_end: location.segments_end,
    }
}

/// The requests `Atlas::open` makes, for the same byte ranges: the tail probe, the footer range
/// when the probe does not hold it, the mask GET. Returns the footer bytes.
async fn bare_reads(
    store: &dyn ObjectStore,
    container: &Path,
    mask: &Path,
    place: &FooterPlace,
) -> impl AsRef<[u8]> {
    let options = GetOptions {
        range: Some(GetRange::Suffix(TAIL_PROBE)),
        ..Default::default()
    };
    let probe = store
        .get_opts(container, options)
        .await
        .expect("probe")
        .bytes()
        .await
        .expect("probe bytes");
    let probe_start = place.size - probe.len() as u64;
    let frame = if place.footer.start >= probe_start {
        let start = (place.footer.start - probe_start) as usize;
        let end = (place.footer.end - probe_start) as usize;
        probe.slice(start..end)
    } else {
        store
            .get_range(container, place.footer.clone())
            .await
            .expect("footer range")
    };
    assert!(matches!(
        store.get(mask).await,
        Err(atlas::object_store::Error::NotFound { .. })
    ));
    frame
}

fn open(c: &mut Criterion) {
    let rt = runtime();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    for (label, datasets, samples) in [
        ("1k", 1_000, 50),
        ("10k", 10_000, 30),
        ("100k", 100_000, 15),
    ] {
        let prefix = Path::from(format!("stations_{label}"));
        let container = prefix.clone().join(CONTAINER_OBJECT);
        let mask = prefix.clone().join(MASK_OBJECT);
        rt.block_on(write_station_collection(
            Arc::clone(&store),
            &prefix,
            datasets,
        ));
        let place = rt.block_on(locate(store.as_ref(), &container));
        let baseline = || {
            rt.block_on(async {
                let frame = bare_reads(store.as_ref(), &container, &mask, &place).await;
                wire::decode_and_validate(frame.as_ref(), place.segments_end).expect("footer valid")
            })
        };
        let open_atlas = || {
            rt.block_on(Atlas::open(Arc::clone(&store), &prefix))
                .expect("collection opens")
        };
        // The baseline makes exactly the requests `Atlas::open` makes, for the same ranges.
        let counting = Arc::new(CountingStore::new(Arc::clone(&store)));
        let counted: Arc<dyn ObjectStore> = counting.clone();
        rt.block_on(Atlas::open(Arc::clone(&counted), &prefix))
            .expect("collection opens");
        let open_requests = counting.requests();
        counting.reset();
        rt.block_on(bare_reads(counted.as_ref(), &container, &mask, &place));
        assert_eq!(counting.requests(), open_requests);
        // Both sides see the same footer before anything is timed.
        let (footer, _) = baseline();
        let atlas = open_atlas();
        assert_eq!(atlas.footer(), &footer);
        assert_eq!(atlas.dataset_count(), datasets);
        drop((atlas, footer));

        let mut group = c.benchmark_group(format!("atlas_open_{label}"));
        group.sample_size(samples);
        group.throughput(Throughput::Elements(datasets as u64));
        group.bench_function("baseline_reads_decode_validate", |b| {
            b.iter_custom(|iters| time_iters(iters, baseline));
        });
        group.bench_function("atlas_open", |b| {
            b.iter_custom(|iters| time_iters(iters, open_atlas));
        });
        group.bench_function("reads_only", |b| {
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    rt.block_on(bare_reads(store.as_ref(), &container, &mask, &place))
                })
            });
        });
        group.finish();
    }

    lookup(c, &rt, &store, &Path::from("stations_100k"), 100_000);
}

fn lookup(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    datasets: usize,
) {
    const LOOKUPS: usize = 1_000;
    let atlas = rt
        .block_on(Atlas::open(Arc::clone(store), prefix))
        .expect("collection opens");
    let map: HashMap<String, u32> = (0..datasets).map(|i| (station_name(i), i as u32)).collect();
    let mut rng = SplitMix::new(29);
    let hits: Vec<String> = (0..LOOKUPS)
        .map(|_| station_name(rng.range(0, datasets as u64) as usize))
        .collect();
    let misses: Vec<String> = (0..LOOKUPS)
        .map(|_| {
            let i = rng.range(0, datasets as u64);
            format!("station_{i:06}_2025")
        })
        .collect();
    let ours = |names: &[String]| -> (u64, usize) {
        let mut sum = 0u64;
        let mut found = 0;
        for name in names {
            if let Some(view) = atlas.dataset(black_box(name)) {
                sum += u64::from(view.ordinal());
                found += 1;
            }
        }
        (sum, found)
    };
    let theirs = |names: &[String]| -> (u64, usize) {
        let mut sum = 0u64;
        let mut found = 0;
        for name in names {
            if let Some(ordinal) = map.get(black_box(name.as_str())) {
                sum += u64::from(*ordinal);
                found += 1;
            }
        }
        (sum, found)
    };
    // Both sides agree: every hit found with the same ordinal, every miss missed.
    assert_eq!(ours(&hits), theirs(&hits));
    assert_eq!(ours(&hits).1, LOOKUPS);
    assert_eq!((ours(&misses), theirs(&misses)), ((0, 0), (0, 0)));

    for (kind, names) in [("hit", &hits), ("miss", &misses)] {
        let mut group = c.benchmark_group(format!("atlas_lookup_100k_{kind}"));
        group.sample_size(50);
        group.throughput(Throughput::Elements(LOOKUPS as u64));
        group.bench_function("baseline_std_hashmap_get", |b| {
            b.iter_custom(|iters| time_iters(iters, || theirs(names)));
        });
        group.bench_function("atlas_dataset", |b| {
            b.iter_custom(|iters| time_iters(iters, || ours(names)));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = open
}
criterion_main!(benches);
