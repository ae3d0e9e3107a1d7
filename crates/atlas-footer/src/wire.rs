//! The footer's bytes: compact msgpack, then one zstd frame.

use crate::consts::{FOOTER_ZSTD_LEVEL, MAX_DECODED_FOOTER};
use crate::error::FooterError;
use crate::footer::CollectionFooter;
use serde::Deserialize;

/// Nesting a decode accepts. A `DType` list nests one level per child; real types nest a
/// handful, and the bound keeps hostile input from exhausting the stack.
const MAX_DECODE_DEPTH: usize = 64;

/// The msgpack form of `footer` (rmp-serde compact, positional).
pub fn to_msgpack(footer: &CollectionFooter) -> Vec<u8> {
    // Serializing into a Vec only fails for types serde cannot express; the footer has none,
    // and an error here would be a bug in this crate, not bad input.
    rmp_serde::to_vec(footer).unwrap_or_else(|e| unreachable!("footer serializes: {e}"))
}

/// The footer bytes as they sit in the container: zstd of the msgpack form.
pub fn encode_footer(footer: &CollectionFooter) -> Vec<u8> {
    codec::zstd_frame::compress(&to_msgpack(footer), FOOTER_ZSTD_LEVEL)
}

/// Decodes the msgpack form. Does not validate: see [`crate::validate`].
///
/// The decoder borrows from `bytes` (rmp-serde's slice reader), so a dataset name goes from the
/// buffer straight into its `SmolStr`; the `io::Read` reader would first copy every string into
/// a scratch buffer, which on a 100,000-dataset footer costs about a fifth of the decode.
pub fn from_msgpack(bytes: &[u8]) -> Result<CollectionFooter, FooterError> {
    let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
    de.set_max_depth(MAX_DECODE_DEPTH);
    let footer = CollectionFooter::deserialize(&mut de)
        .map_err(|e| FooterError::corrupt("footer", format!("msgpack decode failed: {e}")))?;
    // A footer is exactly one msgpack value; bytes after it mean the frame is not ours. The
    // slice reader does not report its position, so read on: only a clean end of input at the
    // next marker means nothing follows.
    match serde::de::IgnoredAny::deserialize(&mut de) {
        Err(rmp_serde::decode::Error::InvalidMarkerRead(e))
            if e.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            Ok(footer)
        }
        _ => Err(FooterError::corrupt(
            "footer",
            "bytes after the msgpack value",
        )),
    }
}

/// Decodes the footer bytes as they sit in the container (zstd, then msgpack). Does not
/// validate: see [`crate::validate`].
pub fn decode_footer(frame: &[u8]) -> Result<CollectionFooter, FooterError> {
    let msgpack = codec::zstd_frame::decompress(frame, MAX_DECODED_FOOTER)
        .map_err(|e| FooterError::corrupt("footer", e.to_string()))?;
    from_msgpack(&msgpack)
}

/// Serde for `datasets`: a msgpack array of `[name, schema_index]` pairs, never a map.
///
/// As a map a repeated name would collapse two datasets into one and shift every ordinal after
/// it; as a sequence the decoder sees the repeat and refuses it.
pub mod dataset_pairs {
    use crate::footer::DatasetMap;
    use serde::de::{Error as _, SeqAccess, Visitor};
    use serde::ser::SerializeSeq;
    use serde::{Deserializer, Serializer};
    use smol_str::SmolStr;
    use std::fmt;

    /// Pairs reserved before any has decoded: about 4 MiB of map, whatever the header claims.
    const MAX_PREALLOC_PAIRS: usize = 100_000;

    /// Writes the map as a sequence of `[name, schema_index]` pairs in ordinal order.
    pub fn serialize<S: Serializer>(map: &DatasetMap, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(map.len()))?;
        for (name, schema) in map {
            seq.serialize_element(&(name.as_str(), *schema))?;
        }
        seq.end()
    }

    /// Reads the pairs back, refusing a repeated name.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DatasetMap, D::Error> {
        deserializer.deserialize_seq(PairsVisitor)
    }

    struct PairsVisitor;

    impl<'de> Visitor<'de> for PairsVisitor {
        type Value = DatasetMap;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence of [name, schema_index] pairs")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DatasetMap, A::Error> {
            let reserve = seq.size_hint().unwrap_or(0).min(MAX_PREALLOC_PAIRS);
            let mut map = DatasetMap::with_capacity_and_hasher(reserve, Default::default());
            while let Some((name, schema)) = seq.next_element::<(SmolStr, u32)>()? {
                let ordinal = map.len();
                if let (existing, Some(_)) = map.insert_full(name, schema) {
                    let name = map.get_index(existing).map_or("", |(n, _)| n.as_str());
                    return Err(A::Error::custom(format!(
                        "datasets: name '{name}' at ordinal {ordinal} repeats ordinal {existing}"
                    )));
                }
            }
            Ok(map)
        }
    }
}

/// Decodes and validates in one step: what a reader does with the footer frame.
pub fn decode_and_validate(
    frame: &[u8],
    segments_end: u64,
) -> Result<(CollectionFooter, crate::validate::VariableIndex), FooterError> {
    let footer = decode_footer(frame)?;
    let index = crate::validate::validate(&footer, segments_end)?;
    Ok((footer, index))
}
