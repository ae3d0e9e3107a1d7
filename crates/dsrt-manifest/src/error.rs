use thiserror::Error;

/// Why bytes are not a valid manifest. The reader adds the path.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Not JSON, or a field of the wrong type, missing or repeated (serde_json names line and
    /// column).
    #[error("manifest is malformed: {0}")]
    Malformed(#[from] serde_json::Error),
    /// `format_version` is neither 2 nor 3.
    #[error("manifest format_version {0} is not supported (this reader knows 2 and 3)")]
    UnsupportedVersion(serde_json::Value),
    /// A v2 manifest carries `cache_id`, which only v3 defines.
    #[error("manifest is malformed: a format_version 2 manifest must not carry cache_id")]
    CacheIdInV2,
    /// A v3 manifest lacks `cache_id`.
    #[error("manifest is malformed: a format_version 3 manifest requires cache_id")]
    MissingCacheId,
    /// A shard entry's name is not the one its position pins.
    #[error("manifest is malformed: shards[{position}].name is {found:?}, expected {expected:?}")]
    ShardName {
        /// Position in `shards`, which is the shard id.
        position: usize,
        /// The stored name.
        found: String,
        /// `format!("{:06}.bin", position)`.
        expected: String,
    },
    /// A checksum field is not 64 lowercase hex digits.
    #[error("manifest is malformed: {field} is {value:?}, not 64 lowercase hex digits")]
    Checksum {
        /// Which field.
        field: String,
        /// Its value.
        value: String,
    },
    /// A shard's byte counts or compression contradict each other.
    #[error("manifest is malformed: shards[{position}]: {problem}")]
    ShardEntry {
        /// Position in `shards`.
        position: usize,
        /// What is wrong.
        problem: String,
    },
}
