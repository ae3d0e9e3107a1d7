//! Corruption sweep of a small Atlas collection (the golden fixture: 3 datasets, a `_datasets`
//! segment, one deleted) on an in-memory store: every byte of the header, the zstd footer
//! frame, the trailer and every segment (array-format, including their block tables) flipped
//! two ways, every byte of `deleted.mask` flipped, and both objects truncated at every length.
//! Each case is opened and read (names, attributes, stats, every array: whole, or its first
//! element when a damaged segment declares more than 65,536). Never a panic, a case over 2 s or one
//! allocation over 64 MiB; framing damage and truncation of `data.atlas` are always typed
//! errors.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

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
        let (start, shape) = bounded(&view, "temperature").await?;
        let t = view
            .read_array::<f32>("temperature", start, shape)
            .await
            .map_err(err)?;
        let (start, shape) = bounded(&view, "count").await?;
        let c = view
            .read_array::<i32>("count", start, shape)
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

/// The whole array, or its first element if the segment declares more than 65,536.
async fn bounded(
    view: &atlas::DatasetView<'_>,
    array: &str,
) -> Result<(Vec<usize>, Vec<usize>), String> {
    let layout = view.array_layout(array).await.map_err(|e| variant(&e))?;
    Ok(dsrt_atlas_fuzz_targets::bounded_selection(&layout.shape))
}

#[test]
fn collection_flipped_and_truncated() {
    sweep();
}

fn sweep() {
    common::quiet_caught_arrow_panics();
    let objects = dsrt_atlas_fixtures::atlas_objects().unwrap();
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
            "data.atlas segments"
        } else if at < footer_end {
            "data.atlas footer frame"
        } else {
            "data.atlas trailer"
        };
        // The header's version bytes 6-7 and the trailer's high footer_size bytes included:
        // magic, version and footer_size are all checked.
        let framing = at < 8 || at >= footer_end;
        let masks: &[u8] = &[0x01, 0xff];
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
