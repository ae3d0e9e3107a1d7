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
    dsrt_atlas_codec::zstd_frame::compress(&to_msgpack(footer), FOOTER_ZSTD_LEVEL)
}

/// Decodes the msgpack form. Does not validate: see [`crate::validate`].
///
/// The footer is a msgpack array of its eight fields. The first seven (version, codec, time,
/// pools, variables) hold a handful of entries and go through serde. `datasets`, one pair per
/// dataset and so nearly all of a large footer, is read by [`read_datasets`] straight off the
/// slice: each name is borrowed from the buffer into its `SmolStr` and each index read as an
/// integer, with none of serde's per-value dispatch. The bytes accepted are exactly those the
/// derived `Deserialize` accepts in compact form; a footer in rmp-serde's named (map) form is
/// refused, as the format is positional.
pub fn from_msgpack(bytes: &[u8]) -> Result<CollectionFooter, FooterError> {
    let corrupt = |e: &dyn std::fmt::Display| {
        FooterError::corrupt("footer", format!("msgpack decode failed: {e}"))
    };
    let mut rd = bytes;
    let fields = rmp::decode::read_array_len(&mut rd).map_err(|e| corrupt(&e))?;
    if fields != 8 {
        return Err(FooterError::corrupt(
            "footer",
            format!("an array of {fields} fields, expected 8"),
        ));
    }
    let mut de = rmp_serde::Deserializer::new(std::io::Cursor::new(rd));
    de.set_max_depth(MAX_DECODE_DEPTH);
    let version = u32::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let codec = crate::dtype::Codec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let created_unix_ms = i64::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let string_pool = Vec::<String>::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let dtype_pool = Vec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let schema_pool = Vec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let variables = Vec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    // The head is a few hundred bytes at most; what follows is the datasets array.
    let consumed = usize::try_from(de.position()).map_err(|e| corrupt(&e))?;
    let mut rd = rd
        .get(consumed..)
        .ok_or_else(|| corrupt(&"position past the end"))?;
    let datasets = read_datasets(&mut rd)?;
    // A footer is exactly one msgpack value; bytes after it mean the frame is not ours.
    if !rd.is_empty() {
        return Err(FooterError::corrupt(
            "footer",
            format!("{} bytes after the msgpack value", rd.len()),
        ));
    }
    Ok(CollectionFooter {
        version,
        codec,
        created_unix_ms,
        string_pool,
        dtype_pool,
        schema_pool,
        variables,
        datasets,
    })
}

/// Reads `datasets` (a msgpack array of `[name, schema_index]` pairs) off the front of `rd`,
/// refusing a repeated name. Reserves at most `MAX_PREALLOC_PAIRS` before anything decodes.
fn read_datasets(rd: &mut &[u8]) -> Result<crate::footer::DatasetMap, FooterError> {
    let corrupt = |ordinal: Option<usize>, e: &dyn std::fmt::Display| {
        let at = ordinal.map_or_else(|| "datasets".to_owned(), |o| format!("datasets[{o}]"));
        FooterError::corrupt(at, format!("msgpack decode failed: {e}"))
    };
    let count = rmp::decode::read_array_len(rd).map_err(|e| corrupt(None, &e))?;
    let count = usize::try_from(count).map_err(|e| corrupt(None, &e))?;
    let reserve = count.min(dataset_pairs::MAX_PREALLOC_PAIRS);
    let mut map = crate::footer::DatasetMap::with_capacity_and_hasher(reserve, Default::default());
    for ordinal in 0..count {
        let at = Some(ordinal);
        let pair = rmp::decode::read_array_len(rd).map_err(|e| corrupt(at, &e))?;
        if pair != 2 {
            return Err(corrupt(at, &format_args!("a pair of {pair} elements")));
        }
        let (name, rest) = rmp::decode::read_str_from_slice(*rd).map_err(|e| corrupt(at, &e))?;
        *rd = rest;
        let schema: u32 = rmp::decode::read_int(rd).map_err(|e| corrupt(at, &e))?;
        if let (existing, Some(_)) = map.insert_full(smol_str::SmolStr::new(name), schema) {
            return Err(FooterError::corrupt(
                "footer",
                format!(
                    "msgpack decode failed: datasets: name '{name}' at ordinal {ordinal} repeats ordinal {existing}"
                ),
            ));
        }
    }
    Ok(map)
}

/// Decodes the footer bytes as they sit in the container (zstd, then msgpack). Does not
/// validate: see [`crate::validate`].
pub fn decode_footer(frame: &[u8]) -> Result<CollectionFooter, FooterError> {
    let msgpack = dsrt_atlas_codec::zstd_frame::decompress(frame, MAX_DECODED_FOOTER)
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
    pub(super) const MAX_PREALLOC_PAIRS: usize = 100_000;

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
