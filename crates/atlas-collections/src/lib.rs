//! Atlas collections: many datasets of n-dimensional arrays in one write-once container.
//!
//! What it is for: the one crate an application depends on. It re-exports the writer
//! ([`AtlasWriter`], [`DatasetSpec`], [`ArraySpec`]), the reader ([`Atlas`], [`DatasetView`],
//! [`SchemaView`]), attribute values ([`Attr`]), the format's types ([`format`](mod@format)) and the store
//! adapters ([`store`]). A collection is a store prefix holding `data.atlas` (write-once) and,
//! after a delete, `deleted.mask`; `docs/format/atlas.md` specifies both byte for byte.
//!
//! What it is not for: code of its own. Everything lives in the `atlas-*` crates below it.
//!
//! Layering: the top library layer; only the `atlas` binary sits above it.
//!
//! ```
//! use std::sync::Arc;
//! use atlas::{ArraySpec, Atlas, AtlasWriter, Attr, DatasetSpec, WriterOptions};
//! use atlas::ndarray::{ArrayD, IxDyn};
//! use atlas::object_store::{memory::InMemory, path::Path, ObjectStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
//! let prefix = Path::from("weather");
//!
//! let mut writer = AtlasWriter::new(store.clone(), &prefix, WriterOptions::default());
//! for (name, base) in [("jan_2024", 1.0f32), ("feb_2024", 2.0)] {
//!     let data = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![base; 4])?;
//!     let temperature = ArraySpec::new("temperature", data).dims(["y", "x"]).attr("units", "K");
//!     writer.write_dataset(DatasetSpec::new(name).array(temperature).attr("station", "north"))?;
//! }
//! writer.finish().await?;
//!
//! let atlas = Atlas::open(store, &prefix).await?;
//! let feb = atlas.dataset("feb_2024").expect("written above");
//! let values = feb.read_array::<f32>("temperature", vec![], vec![]).await?;
//! assert_eq!(values.sum(), 8.0);
//! assert_eq!(feb.get_attribute("station").await?, Some(Attr::from("north")));
//! assert_eq!(atlas.array_stats("temperature").await?.datasets, 2);
//! atlas.delete(&["jan_2024"]).await?;
//! assert!(atlas.dataset("jan_2024").is_none());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub use array_format::{FillValue, StatValue, TimestampNs};
pub use atlas_append::{
    collect_garbage, compact, copy_dataset, create_tag, AppendError, AppendReport, Appender,
    CollectionWriter, CompactReport, GcError, GcOptions, GcReport, Occupancy, TagReport, Target,
    TargetError, WriteMode, Written, DEFAULT_GRACE as DEFAULT_GC_GRACE,
};
pub use atlas_model::{validate_name, Attr, NameError, NameKind, UnknownNameKind};
pub use atlas_reader::manifest;
pub use atlas_reader::{
    check_local_collection, retry_pause, ArrayData, ArrayLayout, ArrayMeta, ArraySchema, At, Atlas,
    AtlasError, AttrCondition, CollectionStats, CommitOutcome, Comparison, ConditionalPutCommitter,
    DatasetSchema, DatasetStats, DatasetView, DeleteReport, GrowingProblem, IntoAtlasStore,
    LocalFlockCommitter, MaskCommitter, MergeFn, Run, SchemaView, SelectValue, Selection, Stat,
    StatCondition, VerifyDepth, VerifyProblem, VerifyReport, MAX_VERIFY_CHUNK_ELEMENTS,
};
pub use atlas_writer::{
    ArraySpec, AtlasWriter, DatasetSpec, WriteError, WriteSummary, WriterOptions,
};
pub use ndarray;
pub use object_store;

/// The format's own types and byte-level functions: the footer and its pools, the container's
/// framing, the footer's wire form, its validation, and the deletion mask. Each item is exported
/// once: types and constants here, functions in the submodule of their job.
pub mod format {
    pub use atlas_footer::builder::BuildError;
    pub use atlas_footer::{
        Codec, CollectionFooter, DType, DatasetMap, FooterBudget, FooterBuilder, FooterError,
        FooterLocation, IndexPairs, InlineList, InsertError, InternedSchema, Trailer, UnknownCodec,
        VariableEntry, CONTAINER_OBJECT, DATASETS_SEGMENT, FOOTER_BUDGET_BASE,
        FOOTER_BUDGET_PER_STORED_BYTE, FOOTER_ZSTD_LEVEL, FORMAT_VERSION, HEADER_SIZE, MAGIC,
        MASK_OBJECT, MAX_DECODED_FOOTER, MAX_FOOTER_SIZE, TAIL_PROBE, TRAILER_SIZE,
    };
    pub use atlas_mask::{DeletedSet, MaskError};

    /// The container's framing: the 8-byte header, the 16-byte trailer, the tail probe.
    pub mod trailer {
        pub use atlas_footer::trailer::{
            check_header, encode_header, encode_trailer, locate_footer, parse_trailer,
            slice_of_probe,
        };
    }

    /// The footer's wire form: msgpack, in a zstd frame.
    pub mod wire {
        pub use atlas_footer::wire::{
            decode_and_validate, decode_and_validate_within, decode_footer, encode_footer,
            from_msgpack, to_msgpack,
        };
    }

    /// The checks a decoded footer passes before use.
    pub mod validate {
        pub use atlas_footer::validate::{validate, VariableIndex};
    }
}

/// The object-store adapters: segment view, append sink, request counter.
pub mod store {
    pub use atlas_store::*;
}

/// Compile-time checks of the public surface (doctests only).
///
/// Error enums grow: a match from outside the crate needs a wildcard arm.
/// ```compile_fail,E0004
/// fn kind(e: &atlas::AtlasError) -> u8 {
///     use atlas::AtlasError::*;
///     match e {
///         NotAnAtlasCollection { .. } | UnsupportedVersion { .. } | CorruptCollection { .. } => 0,
///         DatasetNotFound(_) | NoSuchArray(_) | ArrayNotFound { .. } => 1,
///         TypeMismatch { .. } | InvalidSelection { .. } => 2,
///         Mask { .. } | DeleteConflict { .. } | Segment { .. } | Store(_) | Io { .. } => 3,
///     }
/// }
/// ```
/// `format` exports each item once: no internal module of `atlas-footer` comes along.
/// ```compile_fail,E0432
/// use atlas::format::consts::MAGIC;
/// ```
/// ```compile_fail,E0432
/// use atlas::format::dtype::DType;
/// ```
/// ```compile_fail,E0432
/// use atlas::format::trailer::Trailer; // it is `atlas::format::Trailer`
/// ```
/// The delete committer's test hooks are not part of the API.
/// ```compile_fail,E0432
/// use atlas::StepHook;
/// ```
/// ```compile_fail,E0432
/// use atlas::CommitStep;
/// ```
#[cfg(doctest)]
pub struct SurfaceChecks;
