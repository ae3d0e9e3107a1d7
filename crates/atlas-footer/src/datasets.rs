//! [`DatasetMap`]: the footer's dataset names in one buffer, indexed by hash.
//!
//! A footer of 100,000 datasets is 100,000 short names. Holding each in its own string (and an
//! `IndexMap` entry beside it) costs an allocation or a 24-byte key per name and scatters them
//! over the heap. Here the names sit back to back in one `String`, with the offset where each
//! ends; the schema indices sit in a `Vec<u32>`; and a hash table holds only ordinals (`u32`),
//! hashing and comparing through the name buffer. Lookup by `&str` is one hash and, almost
//! always, one comparison; iteration walks the buffer in footer order.

use hashbrown::HashTable;
use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{BuildHasher, Hasher};

/// Dataset name to schema index; a name's position is its ordinal.
///
/// The hasher is randomly keyed per map (names are untrusted input, so hash flooding stays off
/// the table) and fast on short names.
///
/// On the wire a msgpack array of `[name, schema_index]` pairs in ordinal order (never a map:
/// a map would collapse a repeated name and shift every later ordinal).
#[derive(Clone, Default)]
pub struct DatasetMap {
    /// Every name, in ordinal order, back to back.
    names: String,
    /// `ends[i]` is one past the last byte of name `i` in `names`; name `i` starts at
    /// `ends[i - 1]` (0 for the first).
    ends: Vec<u32>,
    /// `schemas[i]` is dataset `i`'s schema pool index.
    schemas: Vec<u32>,
    /// Ordinals, hashed by their name.
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

/// Why [`DatasetMap::insert`] refused a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InsertError {
    /// The name is already in the map, at this ordinal.
    Duplicate(usize),
    /// The map is full: ordinals and name offsets are `u32`.
    Full,
}

impl DatasetMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty map with room for `datasets` names of `name_bytes` bytes in all.
    pub fn with_capacity(datasets: usize, name_bytes: usize) -> Self {
        Self {
            names: String::with_capacity(name_bytes),
            ends: Vec::with_capacity(datasets),
            schemas: Vec::with_capacity(datasets),
            index: HashTable::with_capacity(datasets),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Number of datasets, deleted ones included.
    pub fn len(&self) -> usize {
        self.schemas.len()
    }

    /// Whether the map holds no dataset.
    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }

    /// Adds `name` with `schema` at the next ordinal, which it returns. A name already present
    /// is refused (the map is unchanged) with the ordinal that holds it.
    pub fn insert(&mut self, name: &str, schema: u32) -> Result<usize, InsertError> {
        let ordinal = self.len();
        let ordinal32 = u32::try_from(ordinal).map_err(|_| InsertError::Full)?;
        let end = self
            .names
            .len()
            .checked_add(name.len())
            .and_then(|end| u32::try_from(end).ok())
            .ok_or(InsertError::Full)?;
        let hash = self.hash(name.as_bytes());
        let Self {
            names,
            ends,
            index,
            hasher,
            ..
        } = self;
        match index.entry(
            hash,
            |&i| name_at(names, ends, i) == name.as_bytes(),
            |&i| hash_with(hasher, name_at(names, ends, i)),
        ) {
            hashbrown::hash_table::Entry::Occupied(existing) => {
                Err(InsertError::Duplicate(*existing.get() as usize))
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(ordinal32);
                names.push_str(name);
                ends.push(end);
                self.schemas.push(schema);
                Ok(ordinal)
            }
        }
    }

    /// The ordinal of `name`, if the map holds it.
    pub fn get_index_of(&self, name: &str) -> Option<usize> {
        let hash = self.hash(name.as_bytes());
        self.index
            .find(hash, |&i| {
                name_at(self.names.as_bytes(), &self.ends, i) == name.as_bytes()
            })
            .map(|&i| i as usize)
    }

    /// The schema index of `name`, if the map holds it.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.get_full(name).map(|(_, schema)| schema)
    }

    /// The ordinal and schema index of `name`, if the map holds it.
    pub fn get_full(&self, name: &str) -> Option<(usize, u32)> {
        let ordinal = self.get_index_of(name)?;
        Some((ordinal, *self.schemas.get(ordinal)?))
    }

    /// Whether the map holds `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get_index_of(name).is_some()
    }

    /// The name and schema index at `ordinal`.
    pub fn get_index(&self, ordinal: usize) -> Option<(&str, u32)> {
        Some((self.name(ordinal)?, *self.schemas.get(ordinal)?))
    }

    /// The name at `ordinal`.
    pub fn name(&self, ordinal: usize) -> Option<&str> {
        let end = *self.ends.get(ordinal)? as usize;
        let start = match ordinal.checked_sub(1) {
            Some(previous) => *self.ends.get(previous)? as usize,
            None => 0,
        };
        self.names.get(start..end)
    }

    /// Every schema index, in ordinal order.
    pub fn schemas(&self) -> &[u32] {
        &self.schemas
    }

    /// Every schema index, in ordinal order, to change (names and ordinals stay).
    pub fn schemas_mut(&mut self) -> &mut [u32] {
        &mut self.schemas
    }

    /// Every name, in ordinal order.
    pub fn names(&self) -> Names<'_> {
        Names {
            names: &self.names,
            ends: self.ends.iter(),
            start: 0,
        }
    }

    /// Every `(name, schema index)`, in ordinal order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            names: self.names(),
            schemas: self.schemas.iter(),
        }
    }

    /// The bytes of every name together (the sum of their lengths).
    pub fn name_bytes(&self) -> usize {
        self.names.len()
    }

    fn hash(&self, name: &[u8]) -> u64 {
        hash_with(&self.hasher, name)
    }
}

/// Name `ordinal` of `names`, as bytes; empty for an ordinal the map does not hold (never
/// called with one).
fn name_at<'a>(names: &'a (impl AsRef<[u8]> + ?Sized), ends: &[u32], ordinal: u32) -> &'a [u8] {
    let ordinal = ordinal as usize;
    let end = ends.get(ordinal).map_or(0, |&e| e as usize);
    let start = match ordinal.checked_sub(1) {
        Some(previous) => ends.get(previous).map_or(0, |&e| e as usize),
        None => 0,
    };
    names.as_ref().get(start..end).unwrap_or_default()
}

fn hash_with(hasher: &foldhash::fast::RandomState, name: &[u8]) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(name);
    h.finish()
}

/// Builds a [`DatasetMap`] straight from decoded bytes: what the footer decode uses.
///
/// Names arrive as bytes and are checked to be UTF-8 all at once, at [`finish`], which is
/// several times faster than checking 100,000 short names one by one. The decoder asks
/// [`first_invalid_name`] before it reports any other error, so the first bad name is still
/// the one reported.
///
/// [`finish`]: RawDatasets::finish
/// [`first_invalid_name`]: RawDatasets::first_invalid_name
pub(crate) struct RawDatasets {
    names: Vec<u8>,
    ends: Vec<u32>,
    schemas: Vec<u32>,
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl RawDatasets {
    /// Room for `datasets` entries and `name_bytes` bytes of names, both bounded by the caller.
    pub(crate) fn with_capacity(datasets: usize, name_bytes: usize) -> Self {
        Self {
            names: Vec::with_capacity(name_bytes),
            ends: Vec::with_capacity(datasets),
            schemas: Vec::with_capacity(datasets),
            index: HashTable::with_capacity(datasets),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Appends `name` with `schema`; a repeated name returns the ordinal that holds it (the
    /// name stays appended, so [`Self::first_invalid_name`] still sees it). `Err(None)`: the
    /// map is full (offsets are `u32`).
    #[inline]
    pub(crate) fn push(&mut self, name: &[u8], schema: u32) -> Result<(), Option<usize>> {
        let ordinal = u32::try_from(self.ends.len()).map_err(|_| None)?;
        self.names.extend_from_slice(name);
        let end = u32::try_from(self.names.len()).map_err(|_| None)?;
        self.ends.push(end);
        self.schemas.push(schema);
        let hash = hash_with(&self.hasher, name);
        let Self {
            names,
            ends,
            index,
            hasher,
            ..
        } = self;
        match index.entry(
            hash,
            |&i| name_at(names, ends, i) == name,
            |&i| hash_with(hasher, name_at(names, ends, i)),
        ) {
            hashbrown::hash_table::Entry::Occupied(existing) => Err(Some(*existing.get() as usize)),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(ordinal);
                Ok(())
            }
        }
    }

    /// The first name appended so far that is not UTF-8: its ordinal, its bytes and why.
    pub(crate) fn first_invalid_name(&self) -> Option<(usize, &[u8], std::str::Utf8Error)> {
        let valid_up_to = match std::str::from_utf8(&self.names) {
            Ok(_) => return None,
            Err(e) => e.valid_up_to(),
        };
        // The first name ending past the valid prefix holds the first bad byte.
        let ordinal = self
            .ends
            .partition_point(|&end| (end as usize) <= valid_up_to);
        let name = name_at(&self.names, &self.ends, u32::try_from(ordinal).ok()?);
        let error = std::str::from_utf8(name).err()?;
        Some((ordinal, name, error))
    }

    /// The finished map, or the first name that is not UTF-8 (as [`Self::first_invalid_name`]).
    pub(crate) fn finish(self) -> Result<DatasetMap, (usize, std::str::Utf8Error)> {
        let Self {
            names,
            ends,
            schemas,
            index,
            hasher,
        } = self;
        match String::from_utf8(names) {
            Ok(names) => Ok(DatasetMap {
                names,
                ends,
                schemas,
                index,
                hasher,
            }),
            Err(e) => {
                let whole = e.utf8_error();
                let raw = Self {
                    names: e.into_bytes(),
                    ends,
                    schemas,
                    index,
                    hasher,
                };
                // Some name holds the first bad byte; the fallback is never taken.
                let (ordinal, _, error) = raw.first_invalid_name().unwrap_or((0, &[], whole));
                Err((ordinal, error))
            }
        }
    }
}

/// Every name of a [`DatasetMap`], in ordinal order.
#[derive(Debug, Clone)]
pub struct Names<'a> {
    names: &'a str,
    ends: std::slice::Iter<'a, u32>,
    start: usize,
}

impl<'a> Iterator for Names<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let end = *self.ends.next()? as usize;
        let name = self.names.get(self.start..end).unwrap_or_default();
        self.start = end;
        Some(name)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl ExactSizeIterator for Names<'_> {}
impl std::iter::FusedIterator for Names<'_> {}

/// Every `(name, schema index)` of a [`DatasetMap`], in ordinal order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    names: Names<'a>,
    schemas: std::slice::Iter<'a, u32>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, u32);

    #[inline]
    fn next(&mut self) -> Option<(&'a str, u32)> {
        Some((self.names.next()?, *self.schemas.next()?))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.schemas.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl std::iter::FusedIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a DatasetMap {
    type Item = (&'a str, u32);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Equal when the same names map to the same schemas at the same ordinals.
impl PartialEq for DatasetMap {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names && self.ends == other.ends && self.schemas == other.schemas
    }
}

impl Eq for DatasetMap {}

impl fmt::Debug for DatasetMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Writes the map as a sequence of `[name, schema_index]` pairs in ordinal order.
impl Serialize for DatasetMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for pair in self {
            seq.serialize_element(&pair)?;
        }
        seq.end()
    }
}

/// Reads the pairs back, refusing a repeated name. (The footer decode does not come through
/// here: [`crate::wire::from_msgpack`] reads the pairs straight off the bytes.)
impl<'de> Deserialize<'de> for DatasetMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(PairsVisitor)
    }
}

/// Pairs reserved before any has decoded, whatever the sequence claims.
const MAX_PREALLOC_PAIRS: usize = 100_000;

struct PairsVisitor;

impl<'de> Visitor<'de> for PairsVisitor {
    type Value = DatasetMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence of [name, schema_index] pairs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DatasetMap, A::Error> {
        use serde::de::Error as _;
        let reserve = seq.size_hint().unwrap_or(0).min(MAX_PREALLOC_PAIRS);
        let mut map = DatasetMap::with_capacity(reserve, 0);
        while let Some((name, schema)) = seq.next_element::<(std::borrow::Cow<'de, str>, u32)>()? {
            let ordinal = map.len();
            match map.insert(&name, schema) {
                Ok(_) => {}
                Err(InsertError::Duplicate(existing)) => {
                    return Err(A::Error::custom(format!(
                        "datasets: name '{name}' at ordinal {ordinal} repeats ordinal {existing}"
                    )))
                }
                Err(InsertError::Full) => {
                    return Err(A::Error::custom("datasets: more than a u32 can count"))
                }
            }
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_ordinals_and_repeats_are_refused() {
        let mut map = DatasetMap::new();
        assert_eq!(map.insert("jan", 0), Ok(0));
        assert_eq!(map.insert("", 1), Ok(1));
        assert_eq!(map.insert("février", 2), Ok(2));
        assert_eq!(map.insert("jan", 3), Err(InsertError::Duplicate(0)));
        assert_eq!(map.insert("", 3), Err(InsertError::Duplicate(1)));
        assert_eq!(map.len(), 3);
        assert_eq!(map.get_full("février"), Some((2, 2)));
        assert_eq!(map.get(""), Some(1));
        assert_eq!(map.get("ja"), None);
        assert_eq!(map.get_index(0), Some(("jan", 0)));
        assert_eq!(map.get_index(3), None);
        assert_eq!(
            map.iter().collect::<Vec<_>>(),
            [("jan", 0), ("", 1), ("février", 2)]
        );
        assert_eq!(map.names().len(), 3);
        map.schemas_mut()[1] = 7;
        assert_eq!(map.get(""), Some(7));
        assert_eq!(format!("{map:?}"), r#"{"jan": 0, "": 7, "février": 2}"#);
    }

    #[test]
    fn many_names_grow_the_table() {
        let mut map = DatasetMap::new();
        for i in 0..10_000u32 {
            assert_eq!(map.insert(&format!("n{i}"), i), Ok(i as usize));
        }
        for i in (0..10_000u32).rev() {
            assert_eq!(map.get_full(&format!("n{i}")), Some((i as usize, i)));
        }
        let mut other = DatasetMap::with_capacity(1, 1);
        for (name, schema) in &map {
            other.insert(name, schema).unwrap();
        }
        assert_eq!(map, other);
    }

    #[test]
    fn raw_names_are_checked_and_the_first_bad_one_named() {
        let mut raw = RawDatasets::with_capacity(4, 16);
        raw.push(b"ok", 0).unwrap();
        raw.push(b"b\xffd", 0).unwrap();
        raw.push(b"\xc3", 0).unwrap();
        assert_eq!(raw.push(b"ok", 1), Err(Some(0)));
        let (ordinal, name, _) = raw.first_invalid_name().unwrap();
        assert_eq!((ordinal, name), (1, &b"b\xffd"[..]));
        assert_eq!(raw.finish().unwrap_err().0, 1);

        let mut raw = RawDatasets::with_capacity(0, 0);
        raw.push("é".as_bytes(), 0).unwrap();
        raw.push(b"x", 1).unwrap();
        assert!(raw.first_invalid_name().is_none());
        let map = raw.finish().unwrap();
        assert_eq!(map.get_full("x"), Some((1, 1)));
    }
}
