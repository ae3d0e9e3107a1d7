use crate::WriteError;
use dsrt_manifest::{CompressionAlgo, ExtraKeys, STANDARD_KEYS};
use dsrt_schema::Schema;
use std::path::Path;

/// Shard rotation target when none is given: 256 MiB.
pub const DEFAULT_MAX_SHARD_BYTES: u64 = 256 << 20;

/// Which manifest a writer publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ManifestVersion {
    /// Legacy v2 (no stored cache id), for fixtures and interoperability with old readers.
    V2,
    /// v3 with `cache_id` derived from the source name. The default.
    #[default]
    V3,
}

impl ManifestVersion {
    /// The version a manifest's `format_version` number means; `None` for any but 2 and 3.
    pub fn from_number(number: u64) -> Option<Self> {
        match number {
            2 => Some(Self::V2),
            3 => Some(Self::V3),
            _ => None,
        }
    }

    /// The manifest's `format_version` number.
    pub fn number(self) -> u64 {
        match self {
            Self::V2 => 2,
            Self::V3 => 3,
        }
    }
}

/// How a cache is written.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// The source name; a v3 cache id is derived from its exact UTF-8 bytes.
    pub source: String,
    /// The metadata columns every sample carries.
    pub schema: Schema,
    /// Payload compression, applied to every shard.
    pub compression: CompressionAlgo,
    /// Shard rotation target in bytes; must be greater than zero.
    pub max_shard_bytes: u64,
    /// The manifest version to publish.
    pub manifest_version: ManifestVersion,
    /// Whether shards are hashed and written on background threads (the default) or on the
    /// thread that adds samples; see [`WriterOptions::io_threads`].
    pub io_threads: bool,
    /// Top-level manifest keys beyond the format's own, written after them (a token cache's
    /// `tokens`); see [`WriterOptions::manifest_key`].
    pub manifest_keys: ExtraKeys,
}

impl WriterOptions {
    /// Options with no compression, 256 MiB shards and a v3 manifest.
    pub fn new(source: impl Into<String>, schema: Schema) -> Self {
        Self {
            source: source.into(),
            schema,
            compression: CompressionAlgo::None,
            max_shard_bytes: DEFAULT_MAX_SHARD_BYTES,
            manifest_version: ManifestVersion::V3,
            io_threads: true,
            manifest_keys: ExtraKeys::new(),
        }
    }

    /// Sets the payload compression.
    pub fn compression(mut self, algo: CompressionAlgo) -> Self {
        self.compression = algo;
        self
    }

    /// Sets the shard rotation target.
    pub fn max_shard_bytes(mut self, bytes: u64) -> Self {
        self.max_shard_bytes = bytes;
        self
    }

    /// Whether each shard is hashed and written on two background threads (`true`, the
    /// default: the adding thread only copies) or on the thread that adds samples (`false`:
    /// less work in all and no hand-off between cores, which pays where every core already
    /// runs a writer, as in a pool of worker processes). The bytes are the same.
    pub fn io_threads(mut self, threads: bool) -> Self {
        self.io_threads = threads;
        self
    }

    /// Adds the top-level manifest key `name` with `value` (replacing an earlier one of that
    /// name): what a layer above the format records about the whole cache, where a reader finds
    /// it without opening a file but the manifest. Readers that do not know the key ignore it,
    /// and every rewrite of a manifest keeps it. A name the format defines is refused when the
    /// writer is created.
    pub fn manifest_key(mut self, name: impl Into<String>, value: serde_json::Value) -> Self {
        self.manifest_keys.insert(name.into(), value);
        self
    }

    /// Refuses options no cache can be written with (`path` names the cache in the error).
    pub(crate) fn check(&self, path: &Path) -> Result<(), WriteError> {
        if let Some(name) = self
            .manifest_keys
            .keys()
            .find(|name| STANDARD_KEYS.contains(&name.as_str()))
        {
            return Err(WriteError::InvalidOption {
                path: path.to_path_buf(),
                option: "manifest_keys",
                reason: format!("{name:?} is a key of the format itself"),
            });
        }
        Ok(())
    }

    /// Sets the manifest version.
    pub fn manifest_version(mut self, version: ManifestVersion) -> Self {
        self.manifest_version = version;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_version_is_its_format_version_number() {
        for version in [ManifestVersion::V2, ManifestVersion::V3] {
            assert_eq!(
                ManifestVersion::from_number(version.number()),
                Some(version)
            );
        }
        assert_eq!(ManifestVersion::from_number(1), None);
        assert_eq!(ManifestVersion::from_number(4), None);
    }
}
