//! A `SmallVec` whose decode never reserves by an untrusted length.
//!
//! `smallvec`'s own `Deserialize` reserves the length a msgpack array header declares, so a
//! five-byte hostile header could ask for gigabytes. This wrapper serializes identically (a
//! plain sequence) and reserves at most [`MAX_PREALLOC_ITEMS`] up front, growing from there only
//! as elements actually decode.

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// Elements reserved before any has decoded; the rest grow as they arrive.
pub(crate) const MAX_PREALLOC_ITEMS: usize = 1024;

/// A list of `T` kept inline up to `N` elements, on the wire a msgpack array.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct InlineList<T, const N: usize>(pub SmallVec<[T; N]>);

impl<T, const N: usize> Deref for InlineList<T, N> {
    type Target = SmallVec<[T; N]>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<T, const N: usize> DerefMut for InlineList<T, N> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<T, const N: usize> FromIterator<T> for InlineList<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl<T: Serialize, const N: usize> Serialize for InlineList<T, N> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for InlineList<T, N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(InlineListVisitor(PhantomData))
    }
}

struct InlineListVisitor<T, const N: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for InlineListVisitor<T, N> {
    type Value = InlineList<T, N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = SmallVec::new();
        out.reserve(seq.size_hint().unwrap_or(0).min(MAX_PREALLOC_ITEMS));
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(InlineList(out))
    }
}
