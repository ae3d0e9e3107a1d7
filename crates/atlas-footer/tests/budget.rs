//! The footer's memory budget: what a decode allocates is charged before it is allocated and
//! never exceeds the charge, and footers that ask for more than their stored size allows are
//! refused, naming the footer, before the memory is taken.
//!
//! A counting global allocator records the peak live heap of each decode (this test binary
//! only). Every hostile footer is a few KB stored; before the budget, the ones that decode
//! (16 MiB of empty strings, 8 MiB of empty schemas) took 25 to 90 times their decoded size.
#![allow(unsafe_code)] // the counting allocator below
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small known values

use atlas_footer::wire::{decode_and_validate, decode_and_validate_within, encode_footer};
use atlas_footer::{
    Codec, CollectionFooter, DType, FooterBudget, FooterBuilder, FooterError, IndexPairs,
    InternedSchema, FOOTER_BUDGET_BASE, FOOTER_BUDGET_PER_STORED_BYTE,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The tests run one at a time: the counters are process-wide, and a test building its input
/// on another thread would show in a measured peak.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Counting;

// SAFETY: every method forwards to `System` unchanged and only updates atomic counters, which
// never allocate; the contract is `System`'s.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `layout`, forwarded.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f`, returning its result and the peak heap it added.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - before)
}

fn frame(msgpack: &[u8]) -> Vec<u8> {
    dsrt_atlas_codec::zstd_frame::compress(msgpack, 1)
}

/// The head of a footer whose string pool is a list of `strings` items (which follow).
fn head(strings: u32) -> Vec<u8> {
    let mut head = vec![0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0xdd];
    head.extend_from_slice(&strings.to_be_bytes());
    head
}

fn refused_as_footer(result: Result<impl std::fmt::Debug, FooterError>) -> String {
    match result {
        Err(FooterError::CorruptCollection { field, reason }) if field == "footer" => reason,
        other => panic!("expected a CorruptCollection naming the footer, got {other:?}"),
    }
}

/// A hostile frame must be refused fast, naming the footer and the rule, with at most its
/// budget's limit taken from the heap (what the stored size allows, not what it asks for).
fn assert_refused_within_budget(frame: &[u8], asks: u64) {
    let limit = FooterBudget::for_footer_size(frame.len() as u64).limit();
    let start = Instant::now();
    let (result, peak) = peak_of(|| decode_and_validate(frame, 8));
    let reason = refused_as_footer(result);
    assert!(reason.contains("stored bytes may take"), "{reason}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        (peak as u64) <= limit,
        "peak {peak} above the limit {limit} of a {}-byte frame",
        frame.len()
    );
    assert!(
        (peak as u64) < asks / 4,
        "peak {peak} is not far below the {asks} bytes the footer asks for"
    );
}

#[test]
fn sixteen_mebibytes_of_empty_strings_are_refused_before_they_are_built() {
    let _serial = serial();
    // 16 Mi empty strings: 16 MiB of msgpack, 384 MiB of `String`s (400-770 MiB of heap
    // measured before the budget).
    let strings = 16 << 20;
    let mut msgpack = head(strings);
    msgpack.resize(msgpack.len() + strings as usize, 0xa0);
    msgpack.extend_from_slice(&[0x90, 0x90, 0x90, 0x90]);
    let frame = frame(&msgpack);
    assert!(frame.len() < 4096, "{}", frame.len());
    assert_refused_within_budget(&frame, u64::from(strings) * 24);
}

#[test]
fn empty_schemas_are_refused_before_they_are_built() {
    let _serial = serial();
    // 2 Mi schemas `[[], [], []]`: 8 MiB of msgpack, 2 Mi x 184 bytes decoded.
    let schemas: u32 = 2 << 20;
    let mut msgpack = vec![
        0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0x90, 0x90, 0xdd,
    ];
    msgpack.extend_from_slice(&schemas.to_be_bytes());
    for _ in 0..schemas {
        msgpack.extend_from_slice(&[0x93, 0x90, 0x90, 0x90]);
    }
    msgpack.extend_from_slice(&[0x90, 0x90]);
    let frame = frame(&msgpack);
    let asks = u64::from(schemas) * std::mem::size_of::<InternedSchema>() as u64;
    assert_refused_within_budget(&frame, asks);
}

#[test]
fn a_frame_of_zeros_stops_decoding_at_its_budget() {
    let _serial = serial();
    // 256 MiB of zeros in a frame of a few KB: before, the 1 GiB decode limit let it decode
    // whole before the msgpack was looked at.
    let zeros = vec![0u8; 256 << 20];
    let frame = frame(&zeros);
    drop(zeros);
    let (result, peak) = peak_of(|| decode_and_validate(&frame, 8));
    let reason = refused_as_footer(result);
    assert!(
        reason.contains("decoding the frame to more than"),
        "{reason}"
    );
    let limit = FooterBudget::for_footer_size(frame.len() as u64).limit();
    assert!((peak as u64) <= limit + (1 << 20), "{peak} {limit}");
}

#[test]
fn a_list_header_claiming_more_items_than_bytes_left_is_refused_by_name() {
    let mut msgpack = head(u32::MAX);
    msgpack.extend_from_slice(&[0xa0; 16]);
    let error = atlas_footer::wire::from_msgpack(&msgpack).unwrap_err();
    assert!(
        matches!(&error, FooterError::CorruptCollection { field, .. } if field == "string_pool"),
        "{error:?}"
    );
}

/// Footers of several shapes that stress each pool: every one must be charged at least the
/// heap its decode and validation take (the charge is an upper bound, so the limit bounds the
/// heap), and not wildly more (so the limit is not spent on nothing).
#[test]
fn what_a_decode_charges_bounds_what_it_allocates() {
    let _serial = serial();
    for (name, footer) in shapes() {
        let frame = encode_footer(&footer);
        let mut budget = FooterBudget::for_footer_size(frame.len() as u64);
        let (decoded, peak) =
            peak_of(|| decode_and_validate_within(&frame, common_end(&footer), &mut budget));
        let (decoded, _) = decoded.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(decoded, footer, "{name}");
        drop(decoded);
        let charged = budget.used();
        assert!(
            peak as u64 <= charged,
            "{name}: the decode took {peak} bytes, more than the {charged} charged"
        );
        assert!(
            charged <= 3 * peak as u64 + 4096,
            "{name}: charged {charged} for a decode that took {peak}"
        );
    }
}

#[test]
fn the_rule_is_the_base_plus_a_multiple_of_the_stored_size() {
    assert_eq!(FOOTER_BUDGET_BASE, 64 << 20);
    let budget = FooterBudget::for_footer_size(1_000_000);
    assert_eq!(
        budget.limit(),
        FOOTER_BUDGET_BASE + FOOTER_BUDGET_PER_STORED_BYTE * 1_000_000
    );
}

/// Where a footer built by [`shapes`] says its segments end.
fn common_end(footer: &CollectionFooter) -> u64 {
    footer
        .variables
        .last()
        .map_or(8, |v| v.seg_offset + v.seg_len)
}

/// Footers built the way a writer builds them, each heavy in one part.
fn shapes() -> Vec<(&'static str, CollectionFooter)> {
    let build = |variables: usize,
                 datasets: usize,
                 schema_of: &dyn Fn(usize, &mut FooterBuilder) -> InternedSchema| {
        let mut b = FooterBuilder::new();
        let mut names = Vec::new();
        for v in 0..variables {
            let name = format!("variable_{v:05}_with_a_name_longer_than_an_inline_one");
            b.intern_string(&name).unwrap();
            names.push(name);
        }
        for d in 0..datasets {
            let schema = schema_of(d, &mut b);
            let schema = b.intern_schema(schema).unwrap();
            b.add_dataset(&format!("dataset_{d:07}"), schema).unwrap();
        }
        let mut offset = 8;
        b.intern_string("_datasets").unwrap();
        names.push("_datasets".to_owned());
        for name in &names {
            b.add_variable(name, offset, 3).unwrap();
            offset += 3;
        }
        b.finish(Codec::Zstd, 0)
    };
    let name = |v: usize| format!("variable_{v:05}_with_a_name_longer_than_an_inline_one");
    let arrays = |b: &mut FooterBuilder, which: &[usize], dtype: &DType| {
        let dtype = b.intern_dtype(dtype).unwrap();
        which
            .iter()
            .map(|&v| (b.intern_string(&name(v)).unwrap(), dtype))
            .collect::<IndexPairs>()
    };
    let nested = DType::List {
        child: Box::new(DType::FixedSizeList {
            child: Box::new(DType::List {
                child: Box::new(DType::Int16),
            }),
            size: 3,
        }),
    };
    vec![
        (
            "many datasets, one schema",
            build(3, 50_000, &|_, b| InternedSchema {
                arrays: arrays(b, &[0, 1, 2], &DType::Float32),
                ..InternedSchema::default()
            }),
        ),
        (
            "many schemas with spilled lists",
            build(40, 5_000, &|d, b| {
                let which: Vec<usize> = (0..40).filter(|v| (d >> (v % 13)) & 1 == 1).collect();
                let keys = arrays(b, &which, &DType::Int64);
                InternedSchema {
                    arrays: arrays(b, &which, &DType::Float64),
                    attrs: keys.clone(),
                    array_attrs: if which.is_empty() {
                        Default::default()
                    } else {
                        (0..which.len().min(5) as u32)
                            .map(|p| (p, keys.clone()))
                            .collect()
                    },
                }
            }),
        ),
        (
            "nested dtypes",
            build(8, 1_000, &|d, b| InternedSchema {
                arrays: arrays(b, &[d % 8], &nested),
                ..InternedSchema::default()
            }),
        ),
        (
            "many long strings and variables",
            build(20_000, 10, &|d, b| InternedSchema {
                arrays: arrays(b, &[d, d + 1], &DType::UInt8),
                ..InternedSchema::default()
            }),
        ),
    ]
}
