use serde::{Deserialize, Serialize};

/// The file name of shard `id` inside `shards/`: `format!("{:06}.bin", id)`.
pub fn shard_file_name(id: usize) -> String {
    format!("{id:06}.bin")
}

/// How the payloads of one shard are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressionAlgo {
    /// Payload bytes as they are.
    None,
    /// A `u32` LE uncompressed length, then one LZ4 block.
    Lz4,
}

impl CompressionAlgo {
    /// The name the manifest, the CLI and Python use: `"none"` or `"lz4"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Lz4 => "lz4",
        }
    }

    /// The algorithm a name (any case) means; `None` for a name that is neither.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "none" => Some(Self::None),
            "lz4" => Some(Self::Lz4),
            _ => None,
        }
    }
}

/// `{"algo": ..., "ratio": ...}` of a shard entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShardCompression {
    /// Algorithm applied to every payload of the shard.
    pub algo: CompressionAlgo,
    /// `uncompressed_byte_len / byte_len`; 1.0 for `none`. Informational.
    pub ratio: f64,
}

/// One entry of the manifest's `shards` array; its position is the shard id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardEntry {
    /// File name inside `shards/`.
    pub name: String,
    /// Size the shard would have with every payload uncompressed, envelopes included.
    pub uncompressed_byte_len: u64,
    /// The shard file's size on disk.
    pub byte_len: u64,
    /// How its payloads are stored.
    pub compression: ShardCompression,
    /// Lowercase hex SHA-256 of the shard file.
    pub sha256: String,
}

impl ShardEntry {
    /// The entry a writer records for a finished shard.
    pub fn new(
        id: usize,
        algo: CompressionAlgo,
        uncompressed_byte_len: u64,
        byte_len: u64,
        sha256: String,
    ) -> Self {
        let ratio = match algo {
            CompressionAlgo::None => 1.0,
            // Exact division of two u64 as f64 is the pinned definition.
            #[allow(clippy::cast_precision_loss)]
            CompressionAlgo::Lz4 => uncompressed_byte_len as f64 / byte_len as f64,
        };
        Self {
            name: shard_file_name(id),
            uncompressed_byte_len,
            byte_len,
            compression: ShardCompression { algo, ratio },
            sha256,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_algorithm_name_is_its_manifest_spelling_in_any_case() {
        for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
            let json = serde_json::to_string(&algo).unwrap();
            assert_eq!(json, format!("\"{}\"", algo.name()));
            assert_eq!(CompressionAlgo::from_name(algo.name()), Some(algo));
        }
        assert_eq!(
            CompressionAlgo::from_name("LZ4"),
            Some(CompressionAlgo::Lz4)
        );
        assert_eq!(CompressionAlgo::from_name("zstd"), None);
    }
}
