//! Corruption sweep of a small Atlas collection (the golden fixture: 3 datasets, a `_datasets`
//! segment, one deleted) on an in-memory store: every byte of the header, the zstd footer
//! frame and the trailer flipped two ways, every 3rd segment byte flipped, every byte of
//! `deleted.mask` flipped, and both objects truncated at every length. Each case is opened and
//! read whole (names, attributes, stats, every array). Never a panic, a case over 2 s or one
//! allocation over 64 MiB; framing damage and truncation of `data.atlas` are always typed
//! errors.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code

mod common;

use atlas::format::trailer::{locate_footer, parse_trailer};
use atlas::object_store::memory::InMemory;
use atlas::object_store::path::Path as StorePath;
use atlas::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use atlas::{Atlas, AtlasError};
use common::{variant, Limiting, Outcome, Tally};
use std::sync::Arc;

#[global_allocator]
static GLOBAL: Limiting = Limiting;

/// Everything a reader can see, as text; an error as its variant name.
async fn snapshot(container: &[u8], mask: Option<&[u8]>) -> Result<String, String> {
    let err = |e: AtlasError| variant(&e);
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let prefix = StorePath::from("c");
    let put = |name: &str, bytes: &[u8]| {
        let store = Arc::clone(&store);
        let path = prefix.clone().join(name);
        let payload = PutPayload::from(bytes.to_vec());
        async move { store.put(&path, payload).await.unwrap() }
    };
    put("data.atlas", container).await;
    if let Some(mask) = mask {
        put("deleted.mask", mask).await;
    }
    let atlas = Atlas::open(Arc::clone(&store), &prefix)
        .await
        .map_err(err)?;
    let mut out = format!("deleted {:?}\n", atlas.deleted().ordinals());
    out += &format!(
        "stations {:?}\n",
        atlas.attributes_by_dataset("station").await.map_err(err)?
    );
    for array in ["temperature", "count"] {
        out += &format!(
            "{array} stats {:?}\n",
            atlas.array_stats_by_dataset(array).await.map_err(err)?
        );
    }
    for view in atlas.datasets() {
        out += &format!(
            "{} #{} {:?}\n",
            view.name(),
            view.ordinal(),
            view.attributes().await.map_err(err)?
        );
        let t = view
            .read_array::<f32>("temperature", vec![], vec![])
            .await
            .map_err(err)?;
        let c = view
            .read_array::<i32>("count", vec![], vec![])
            .await
            .map_err(err)?;
        out += &format!("  {:?} {:?}\n", t, c);
        out += &format!(
            "  {:?}\n",
            view.array_attributes("temperature").await.map_err(err)?
        );
        out += &format!("  {:?}\n", view.array_layout("count").await.map_err(err)?);
    }
    Ok(out)
}

#[test]
fn collection_flipped_and_truncated() {
    sweep(false);
}

/// Known finding, open: a flipped `uncompressed_size` in a segment's block table makes the
/// pinned array-format 0.15.0 call `zstd::bulk::decompress(data, uncompressed_size)`, which
/// allocates that many bytes up front (1 TiB here) and aborts the process. The fix belongs in
/// array-format (bound the size, or decode with a streaming decoder); see
/// docs/reliability.md. Run with `--ignored` to reproduce.
#[test]
#[ignore = "aborts: array-format 0.15.0 allocates a segment block's untrusted uncompressed_size"]
fn segment_bytes_flipped() {
    sweep(true);
}

fn sweep(include_segments: bool) {
    common::quiet_caught_arrow_panics();
    let objects = fixtures::atlas_objects().unwrap();
    let (container, mask) = (objects[0].1.clone(), objects[1].1.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let original = runtime.block_on(snapshot(&container, Some(&mask))).unwrap();
    let size = container.len() as u64;
    let footer = locate_footer(size, parse_trailer(&container).unwrap())
        .unwrap()
        .footer;
    let (footer_start, footer_end) = (footer.start as usize, footer.end as usize);
    let mut tally = Tally::default();
    let run = |tally: &mut Tally,
               region: &str,
               what: String,
               c: &[u8],
               m: Option<&[u8]>,
               allowed: &dyn Fn(&Outcome) -> bool| {
        let runtime = &runtime;
        let original = &original;
        tally.case(region, &what, allowed, || {
            match runtime.block_on(snapshot(c, m)) {
                Err(e) => Outcome::Error(e),
                Ok(s) if &s == original => Outcome::Same,
                Ok(_) => Outcome::Different(String::new()),
            }
        });
    };
    let only_errors = |o: &Outcome| matches!(o, Outcome::Error(_));
    let anything = |_: &Outcome| true;
    for at in 0..container.len() {
        let region = if at < 8 {
            "data.atlas header"
        } else if at < footer_start {
            if !include_segments || at % 3 != 0 {
                continue;
            }
            "data.atlas segments (every 3rd byte)"
        } else if at < footer_end {
            "data.atlas footer frame"
        } else {
            "data.atlas trailer"
        };
        // The header's version bytes 6-7 and the trailer's high footer_size bytes included:
        // magic, version and footer_size are all checked.
        let framing = at < 8 || at >= footer_end;
        let masks: &[u8] = if framing || at >= footer_start {
            &[0x01, 0xff]
        } else {
            &[0x01]
        };
        for &mask_bits in masks {
            let mut bytes = container.clone();
            bytes[at] ^= mask_bits;
            let allowed: &dyn Fn(&Outcome) -> bool = if framing { &only_errors } else { &anything };
            run(
                &mut tally,
                region,
                format!("byte {at} ^ {mask_bits:#04x}"),
                &bytes,
                Some(&mask),
                allowed,
            );
        }
    }
    for len in 0..container.len() {
        run(
            &mut tally,
            "data.atlas truncate",
            format!("to {len}"),
            &container[..len],
            Some(&mask),
            &only_errors,
        );
    }
    // deleted.mask has no checksum and the pinned spec makes its decode lenient (bad entries
    // dropped with a warning): a flip may change which datasets are live, but never panics.
    for at in 0..mask.len() {
        for mask_bits in [0x01u8, 0xff] {
            let mut bytes = mask.clone();
            bytes[at] ^= mask_bits;
            run(
                &mut tally,
                "deleted.mask flip",
                format!("byte {at} ^ {mask_bits:#04x}"),
                &container,
                Some(&bytes),
                &anything,
            );
        }
    }
    for len in 0..=mask.len() {
        run(
            &mut tally,
            "deleted.mask truncate",
            format!("to {len}"),
            &container,
            Some(&mask[..len]),
            &anything,
        );
    }
    tally.print("atlas sweep");
    assert!(tally.cases > 4_000, "{} cases", tally.cases);
    // The magic of a short mask is all a reader checks; a mask cut inside its entries keeps
    // the complete ones, so some truncations must show fewer deletions, never an error.
    assert_eq!(
        tally.count("deleted.mask truncate", "error"),
        4,
        "only cuts inside the magic fail"
    );
}
