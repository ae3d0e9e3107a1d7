//! Everything an append can fail with.

use crate::TargetError;
use atlas_reader::AtlasError;
use atlas_writer::WriteError;
use thiserror::Error;

/// An append (or a compaction) that failed. Nothing it wrote is visible: the manifest was not
/// committed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AppendError {
    /// A dataset of this name is already in the collection (or in this append).
    #[error("{collection}: dataset '{name}' is already in {held_by}")]
    NameTaken {
        /// The collection appended to.
        collection: String,
        /// The dataset name.
        name: String,
        /// Where: `part <id> (version <n>)`, or `this append`.
        held_by: String,
    },
    /// The location holds a plain collection (`data.atlas` at its root), which cannot grow.
    #[error("{collection}: a plain collection (data.atlas) cannot be appended to; append to an empty or growing location")]
    PlainCollection {
        /// The collection.
        collection: String,
    },
    /// A collection given to [`Appender::adopt`](crate::Appender::adopt) cannot become a part.
    #[error("{collection}: cannot be adopted as a part: {reason}")]
    Source {
        /// The collection to adopt.
        collection: String,
        /// Why not.
        reason: String,
    },
    /// A dataset a compaction cannot copy into the bytes a fresh write makes.
    #[error("dataset '{dataset}' cannot be copied: {reason}")]
    Uncopyable {
        /// The dataset.
        dataset: String,
        /// Why not.
        reason: String,
    },
    /// Appends kept committing while a compaction rewrote the collection; nothing was
    /// committed and its part was removed.
    #[error("{collection}: compaction gave up after {attempts} tries, each overtaken by an append; run it again when appends pause")]
    CompactConflict {
        /// The collection.
        collection: String,
        /// Compactions made.
        attempts: u32,
    },
    /// A compaction of a location that is not a growing collection with a committed version.
    #[error("{collection}: not a growing collection to compact: {reason}")]
    NotGrowing {
        /// The location.
        collection: String,
        /// What it lacks.
        reason: String,
    },
    /// The commit kept losing races with other appenders.
    #[error("{collection}: append gave up after {attempts} conflicting commits")]
    CommitConflict {
        /// The collection.
        collection: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Reading the collection (its manifest, its parts) or committing failed.
    #[error("{0}")]
    Read(#[from] AtlasError),
    /// Writing the new part failed.
    #[error("{0}")]
    Write(#[from] WriteError),
    /// A local file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The store's location could not be used.
    #[error("store: {0}")]
    Store(#[from] object_store::Error),
    /// The location cannot take a new collection ([`CollectionWriter`](crate::CollectionWriter)).
    #[error(transparent)]
    Target(#[from] TargetError),
}

impl AppendError {
    /// Whether the same append may succeed if made again (see `AtlasError::is_retryable`): a
    /// store or transport failure, or a commit that kept losing races.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::CommitConflict { .. } | Self::CompactConflict { .. } => true,
            Self::Read(e) => e.is_retryable(),
            Self::Write(e) => e.is_retryable(),
            Self::Io { source, .. } => object_access::is_retryable_io_error(source),
            Self::Store(e) => object_access::is_retryable_store_error(e),
            Self::Target(e) => e.is_retryable(),
            Self::NameTaken { .. }
            | Self::PlainCollection { .. }
            | Self::Source { .. }
            | Self::Uncopyable { .. }
            | Self::NotGrowing { .. } => false,
        }
    }

    /// A stable name of the variant, the same for every message wording: what the bindings
    /// call the error's `kind`. A taken name's is what the name names, as a duplicate
    /// dataset's is ([`WriteError::name`]); a read's or a write's is theirs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NameTaken { .. } => "dataset name",
            Self::PlainCollection { .. } => "plain_collection",
            Self::CommitConflict { .. } => "commit_conflict",
            Self::CompactConflict { .. } => "compact_conflict",
            Self::NotGrowing { .. } => "not_growing",
            Self::Uncopyable { .. } => "uncopyable",
            Self::Source { .. } => "source",
            Self::Io { .. } => "io",
            Self::Store(_) => "store",
            Self::Target(_) => "target",
            Self::Read(e) => e.kind(),
            Self::Write(e) => e.kind(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_the_variants_or_the_nested_errors() {
        let taken = AppendError::NameTaken {
            collection: "c".into(),
            name: "jan".into(),
            held_by: "this append".into(),
        };
        assert_eq!(taken.kind(), "dataset name");
        let read = AppendError::Read(AtlasError::DatasetNotFound("jan".into()));
        assert_eq!(read.kind(), "dataset_not_found");
        let write = AppendError::Write(WriteError::Poisoned("x".into()));
        assert_eq!(write.kind(), "poisoned");
        let plain = AppendError::PlainCollection {
            collection: "c".into(),
        };
        assert_eq!(plain.kind(), "plain_collection");
    }
}
