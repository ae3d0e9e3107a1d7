//! Targets for the Atlas parsers and the whole-collection read path.

use atlas::format::{trailer as framing, validate, wire, DType, Trailer};
use atlas::object_store::memory::InMemory;
use atlas::object_store::path::Path as StorePath;
use atlas::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use atlas::{Atlas, DatasetView, TimestampNs};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// The footer: byte 0 bit 0 chooses the layer (0: a zstd frame through `decode_footer`;
/// 1: bare msgpack through `from_msgpack`); a decoded footer is validated against the
/// segment end its variables imply, against 8 and against `u64::MAX`, then re-encoded.
pub fn footer(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let decoded = if head & 1 == 0 {
        wire::decode_footer(body)
    } else {
        wire::from_msgpack(body)
    };
    let Ok(footer) = decoded else {
        return;
    };
    let implied = footer
        .variables
        .last()
        .and_then(|v| v.seg_end())
        .unwrap_or(8);
    for segments_end in [implied, 8, u64::MAX] {
        if let Ok(index) = validate::validate(&footer, segments_end) {
            for i in 0..footer.string_pool.len().min(1024) {
                let _ = index.variable_of(u32::try_from(i).unwrap_or(u32::MAX));
            }
            for i in 0..footer.dataset_count().min(1024) {
                let _ = footer.datasets.get_index(i);
            }
        }
    }
    let again = wire::decode_footer(&wire::encode_footer(&footer));
    assert!(
        again.is_ok(),
        "a decoded footer re-encodes to a decodable one"
    );
}

/// The trailer and tail probe: the input is the tail of a container whose size is the input's
/// length plus `257 *` its first byte (so the probe may or may not cover the header).
pub fn trailer(data: &[u8]) {
    let extra = data.first().map_or(0, |b| u64::from(*b) * 257);
    let size = data.len() as u64 + extra;
    let _ = framing::check_header(data);
    for trailer in [
        framing::parse_trailer(data).ok(),
        Some(Trailer {
            footer_size: size.saturating_sub(24),
        }),
    ]
    .into_iter()
    .flatten()
    {
        for container_size in [size, data.len() as u64, 0, u64::MAX] {
            if let Ok(location) = framing::locate_footer(container_size, trailer) {
                assert!(location.footer.start <= location.footer.end);
                assert!(location.footer.end <= container_size);
                let _ = framing::slice_of_probe(data, container_size, &location.footer);
            }
        }
    }
}

/// `deleted.mask`: byte 0 is the container's dataset count; the rest is the mask. A decoded set
/// must only hold ordinals below the count and must survive encode-then-decode.
pub fn mask(data: &[u8]) {
    let Some((&count, body)) = data.split_first() else {
        return;
    };
    let count = usize::from(count);
    let Ok(set) = atlas_mask::decode(body, count) else {
        return;
    };
    let ordinals = set.ordinals();
    assert!(
        ordinals.iter().all(|o| (*o as usize) < count),
        "ordinal range"
    );
    let again = atlas_mask::decode(&atlas_mask::encode(&set), count).map(|s| s.ordinals());
    assert_eq!(again.ok(), Some(ordinals), "mask round trip");
}

fn template() -> &'static [(&'static str, Vec<u8>)] {
    static OBJECTS: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    OBJECTS.get_or_init(|| dsrt_atlas_fixtures::atlas_objects().expect("writing the Atlas fixture"))
}

thread_local! {
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

/// A whole collection on an in-memory store. Byte 0: bit 0 chooses the object the rest
/// replaces (0 `data.atlas`, 1 `deleted.mask`); bit 1 set leaves `deleted.mask` out. Opens the
/// collection, then reads every live dataset's attributes, layouts, statistics and arrays.
pub fn collection(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let template = template();
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        let runtime = slot.get_or_insert_with(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime")
        });
        runtime.block_on(read_collection(template, head, body));
    });
}

async fn read_collection(template: &[(&str, Vec<u8>)], head: u8, body: &[u8]) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let prefix = StorePath::from("c");
    for (index, (name, original)) in template.iter().enumerate() {
        let replaced = usize::from(head & 1) == index;
        if index == 1 && head & 2 != 0 && !replaced {
            continue;
        }
        let bytes = if replaced {
            body.to_vec()
        } else {
            original.clone()
        };
        let put = store
            .put(&prefix.clone().join(*name), PutPayload::from(bytes))
            .await;
        put.expect("an in-memory put succeeds");
    }
    let Ok(atlas) = Atlas::open(Arc::clone(&store), &prefix).await else {
        return;
    };
    let _ = (atlas.dataset_count(), atlas.deleted().len());
    let variables: Vec<String> = atlas
        .variables()
        .take(64)
        .map(|(name, _)| name.to_owned())
        .collect();
    for name in &variables {
        let _ = atlas.array_stats(name).await;
    }
    let _ = atlas.attributes_by_dataset("station").await;
    let views: Vec<DatasetView<'_>> = atlas.datasets().take(64).collect();
    for view in views {
        let _ = view.attributes().await;
        let arrays: Vec<(String, DType)> = view
            .schema()
            .arrays()
            .take(64)
            .map(|a| (a.name().to_owned(), a.dtype().clone()))
            .collect();
        for (array, dtype) in arrays {
            let _ = view.array_attributes(&array).await;
            let _ = view.array_stats(&array).await;
            let Ok(layout) = view.array_layout(&array).await else {
                continue;
            };
            let (start, shape) = bounded_selection(&layout.shape);
            read_as(&view, &array, &dtype, start, shape).await;
        }
    }
}

/// Elements a whole-array read may cover; beyond it the target reads one element, as a careful
/// caller of a legitimately huge (e.g. declared, never written) array would.
const MAX_ELEMENTS: u64 = 1 << 16;

/// The `(start, shape)` a careful reader of untrusted data uses for an array of `shape`: the
/// whole array (empty vectors) when it has at most 65,536 elements, else its first element. A
/// segment's shape is the authority for an array's extent, so a whole read of a (damaged or
/// hostile) segment declaring 2^24 × 2 elements legitimately allocates that much.
pub fn bounded_selection(shape: &[u32]) -> (Vec<usize>, Vec<usize>) {
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(u64::from(*d)));
    match elements {
        Some(n) if n <= MAX_ELEMENTS => (Vec::new(), Vec::new()),
        _ => (vec![0; shape.len()], vec![1; shape.len()]),
    }
}

async fn read_as(
    view: &DatasetView<'_>,
    array: &str,
    dtype: &DType,
    start: Vec<usize>,
    shape: Vec<usize>,
) {
    macro_rules! read {
        ($t:ty) => {{
            let _ = view.read_array::<$t>(array, start, shape).await;
        }};
    }
    match dtype {
        DType::Int8 => read!(i8),
        DType::Int16 => read!(i16),
        DType::Int32 => read!(i32),
        DType::Int64 => read!(i64),
        DType::UInt8 => read!(u8),
        DType::UInt16 => read!(u16),
        DType::UInt32 => read!(u32),
        DType::UInt64 => read!(u64),
        DType::Float32 => read!(f32),
        DType::Float64 => read!(f64),
        DType::String => read!(String),
        DType::Binary => read!(Vec<u8>),
        DType::TimestampNs => read!(TimestampNs),
        _ => {
            // No element type to read as; a mismatched read must still be a typed error.
            let _ = view.read_array::<u8>(array, start, shape).await;
        }
    }
}
