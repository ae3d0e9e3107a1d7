use crate::{shard_file_name, CompressionAlgo, ManifestError, ShardEntry};
use dsrt_schema::Schema;
use serde::{Deserialize, Serialize};

/// The manifest's file name inside a cache directory.
pub const MANIFEST_FILE_NAME: &str = "manifest.json";

/// Prefix of every temporary manifest name; readers never open such a file.
pub const MANIFEST_TEMP_PREFIX: &str = ".manifest.json.tmp-";

/// What both manifest versions record about a cache's files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheDescription {
    /// The source name.
    pub source: String,
    /// Number of samples: rows of metadata.arrow and of index.bin.
    pub sample_count: u64,
    /// Metadata columns in Arrow field order.
    pub metadata_schema: Schema,
    /// Lowercase hex SHA-256 of index.bin.
    pub index_sha256: String,
    /// Lowercase hex SHA-256 of metadata.arrow.
    pub metadata_sha256: String,
    /// Shard entries; position is the shard id.
    pub shards: Vec<ShardEntry>,
    /// Every other top-level key, by name: what a layer above the format records about the
    /// cache (a token cache's `tokens`, `docs/format/datasetrt.md`). Parsed as any JSON value
    /// and written after the standard keys, in name order; a name given twice is malformed.
    #[serde(flatten, deserialize_with = "unique_keys")]
    pub extra: ExtraKeys,
}

/// The top-level manifest keys beyond the format's own ([`CacheDescription::extra`]).
pub type ExtraKeys = serde_json::Map<String, serde_json::Value>;

/// The top-level keys the format defines; an extra key may not take one of these names.
pub const STANDARD_KEYS: [&str; 8] = [
    "format_version",
    "cache_id",
    "source",
    "sample_count",
    "metadata_schema",
    "index_sha256",
    "metadata_sha256",
    "shards",
];

/// Collects the keys no field took, refusing a repeated one (serde_json's own map would keep
/// the last, silently).
fn unique_keys<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<ExtraKeys, D::Error> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = ExtraKeys;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("manifest keys")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<ExtraKeys, A::Error> {
            let mut keys = ExtraKeys::new();
            while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                if keys.contains_key(&key) {
                    return Err(serde::de::Error::custom(format_args!(
                        "duplicate key `{key}`"
                    )));
                }
                keys.insert(key, value);
            }
            Ok(keys)
        }
    }
    deserializer.deserialize_map(Keys)
}

/// A format_version 2 manifest: no stored identity; the cache id is the cache's position in
/// the dataset's list of paths.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestV2 {
    /// The cache's files.
    pub description: CacheDescription,
}

/// A format_version 3 manifest: the cache id is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestV3 {
    /// The persistent cache id.
    pub cache_id: u64,
    /// The cache's files.
    pub description: CacheDescription,
}

/// A parsed manifest of a supported version.
#[derive(Debug, Clone, PartialEq)]
pub enum Manifest {
    /// format_version 2.
    V2(ManifestV2),
    /// format_version 3.
    V3(ManifestV3),
}

/// Every key the format knows; unknown keys are ignored by this parse.
#[derive(Deserialize)]
struct RawManifest {
    format_version: u64,
    cache_id: Option<u64>,
    #[serde(flatten)]
    description: CacheDescription,
}

#[derive(Deserialize)]
struct VersionOnly {
    format_version: serde_json::Value,
}

/// Field order of a manifest this crate writes.
#[derive(Serialize)]
struct WrittenManifest<'a> {
    format_version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_id: Option<u64>,
    #[serde(flatten)]
    description: &'a CacheDescription,
}

impl Manifest {
    /// Parses and validates manifest bytes.
    ///
    /// The version is checked first, so a manifest from a future version is reported as
    /// unsupported rather than as malformed.
    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        let version: VersionOnly = serde_json::from_slice(bytes)?;
        match version.format_version.as_u64() {
            Some(2 | 3) => {}
            _ => return Err(ManifestError::UnsupportedVersion(version.format_version)),
        }
        let raw: RawManifest = serde_json::from_slice(bytes)?;
        validate_description(&raw.description)?;
        match (raw.format_version, raw.cache_id) {
            (2, None) => Ok(Self::V2(ManifestV2 {
                description: raw.description,
            })),
            (2, Some(_)) => Err(ManifestError::CacheIdInV2),
            (_, Some(cache_id)) => Ok(Self::V3(ManifestV3 {
                cache_id,
                description: raw.description,
            })),
            (_, None) => Err(ManifestError::MissingCacheId),
        }
    }

    /// 2 or 3.
    pub fn format_version(&self) -> u64 {
        match self {
            Self::V2(_) => 2,
            Self::V3(_) => 3,
        }
    }

    /// The files this manifest describes.
    pub fn description(&self) -> &CacheDescription {
        match self {
            Self::V2(m) => &m.description,
            Self::V3(m) => &m.description,
        }
    }

    /// The cache id this manifest resolves to at `position` in a dataset's list of paths: the
    /// position for v2, the stored id for v3.
    pub fn resolved_cache_id(&self, position: usize) -> u64 {
        self.stored_cache_id().unwrap_or(position as u64)
    }

    /// The value of the extra top-level key `name` (one the format does not define), if present.
    pub fn extra_key(&self, name: &str) -> Option<&serde_json::Value> {
        self.description().extra.get(name)
    }

    /// The stored cache id (v3 only).
    pub fn stored_cache_id(&self) -> Option<u64> {
        match self {
            Self::V2(_) => None,
            Self::V3(m) => Some(m.cache_id),
        }
    }
}

impl ManifestV3 {
    /// The bytes a writer publishes: pretty-printed JSON (two-space indent) with the keys in
    /// the order `format_version`, `cache_id`, then the description's fields, and a final
    /// newline.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        written_bytes(3, Some(self.cache_id), &self.description)
    }
}

impl ManifestV2 {
    /// The bytes of a legacy v2 manifest, laid out like [`ManifestV3::to_json_bytes`] without
    /// `cache_id`. New caches are v3; this exists for fixtures and interoperability tests.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        written_bytes(2, None, &self.description)
    }
}

fn written_bytes(
    format_version: u64,
    cache_id: Option<u64>,
    description: &CacheDescription,
) -> Vec<u8> {
    let written = WrittenManifest {
        format_version,
        cache_id,
        description,
    };
    let mut bytes = serde_json::to_vec_pretty(&written).expect("a manifest always serializes");
    bytes.push(b'\n');
    bytes
}

fn validate_description(description: &CacheDescription) -> Result<(), ManifestError> {
    check_hex("index_sha256", &description.index_sha256)?;
    check_hex("metadata_sha256", &description.metadata_sha256)?;
    for (position, shard) in description.shards.iter().enumerate() {
        let expected = shard_file_name(position);
        if shard.name != expected {
            return Err(ManifestError::ShardName {
                position,
                found: shard.name.clone(),
                expected,
            });
        }
        check_hex(&format!("shards[{position}].sha256"), &shard.sha256)?;
        let none = shard.compression.algo == CompressionAlgo::None;
        if none && shard.uncompressed_byte_len != shard.byte_len {
            return Err(ManifestError::ShardEntry {
                position,
                problem: format!(
                    "compression is none but uncompressed_byte_len {} differs from byte_len {}",
                    shard.uncompressed_byte_len, shard.byte_len
                ),
            });
        }
    }
    Ok(())
}

fn check_hex(field: &str, value: &str) -> Result<(), ManifestError> {
    let ok = value.len() == 64
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(ManifestError::Checksum {
            field: field.to_owned(),
            value: value.to_owned(),
        })
    }
}
