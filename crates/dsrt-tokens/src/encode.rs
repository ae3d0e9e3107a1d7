//! Ids of any integer type checked and laid out as a payload: the one place it is done.

use crate::{TokenDtype, TokenInfo};

/// An integer type token ids may arrive in (NumPy arrays, Arrow lists, Megatron files).
pub trait TokenId: Copy {
    /// The value as an id, or `None` when it is negative or above `u32::MAX`.
    fn to_id(self) -> Option<u32>;
    /// The value itself, for messages.
    fn widened(self) -> i128;
}

macro_rules! token_id {
    ($($t:ty),*) => {$(
        impl TokenId for $t {
            #[inline]
            fn to_id(self) -> Option<u32> {
                u32::try_from(self).ok()
            }
            #[inline]
            fn widened(self) -> i128 {
                i128::from(self)
            }
        }
    )*};
}
token_id!(u8, u16, u32, u64, i8, i16, i32, i64);

/// A document's ids in the integer type they arrived in, known only at run time (a NumPy
/// array's dtype, a list of Python ints): what [`crate::TokenWriter::add_ids`] takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenIds {
    /// `int8` ids.
    I8(Vec<i8>),
    /// `int16` ids.
    I16(Vec<i16>),
    /// `int32` ids.
    I32(Vec<i32>),
    /// `int64` ids.
    I64(Vec<i64>),
    /// `uint8` ids.
    U8(Vec<u8>),
    /// `uint16` ids.
    U16(Vec<u16>),
    /// `uint32` ids.
    U32(Vec<u32>),
    /// `uint64` ids.
    U64(Vec<u64>),
    /// Ids one of which, at `position`, is an integer beyond 64 bits (its decimal text, as
    /// given): refused as out of range, whatever the others.
    Beyond {
        /// Its position in the document.
        position: usize,
        /// Its value in decimal.
        id: String,
    },
}

/// `bytes` as little-endian values of `$t` (bytes short of a whole value at the end are
/// ignored).
macro_rules! from_le {
    ($bytes:expr, $t:ty) => {
        $bytes
            .chunks_exact(std::mem::size_of::<$t>())
            .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect()
    };
}

impl TokenIds {
    /// Ids laid out as little-endian integers of `width` bytes, signed or not (NumPy's dtype
    /// `kind` `"i"` or `"u"` and `itemsize`, as `astype("<i8").tobytes()` gives them);
    /// `None` for a width other than 1, 2, 4 or 8.
    pub fn from_le_bytes(signed: bool, width: usize, bytes: &[u8]) -> Option<Self> {
        Some(match (signed, width) {
            (true, 1) => Self::I8(from_le!(bytes, i8)),
            (true, 2) => Self::I16(from_le!(bytes, i16)),
            (true, 4) => Self::I32(from_le!(bytes, i32)),
            (true, 8) => Self::I64(from_le!(bytes, i64)),
            (false, 1) => Self::U8(bytes.to_vec()),
            (false, 2) => Self::U16(from_le!(bytes, u16)),
            (false, 4) => Self::U32(from_le!(bytes, u32)),
            (false, 8) => Self::U64(from_le!(bytes, u64)),
            _ => return None,
        })
    }
}

/// An id that does not fit: where it is in its document, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadTokenId {
    /// Its position in the document.
    pub position: usize,
    /// Its value.
    pub id: i128,
    /// The largest id allowed.
    pub max_id: u32,
}

/// Checks ids against a token cache's width and vocabulary and writes them as its payloads
/// are laid out (little-endian, the cache's width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenEncoder {
    dtype: TokenDtype,
    max_id: u32,
}

impl TokenEncoder {
    /// The encoder of a cache described by `info`.
    pub fn new(info: &TokenInfo) -> Self {
        Self {
            dtype: info.dtype,
            max_id: info.max_id(),
        }
    }

    /// The width it writes.
    pub fn dtype(&self) -> TokenDtype {
        self.dtype
    }

    /// The largest id it accepts.
    pub fn max_id(&self) -> u32 {
        self.max_id
    }

    /// Replaces `out` with the payload of the document `ids`; the first id that is negative
    /// or above [`Self::max_id`] is refused (and `out` then holds no meaningful bytes).
    pub fn encode<T: TokenId>(&self, ids: &[T], out: &mut Vec<u8>) -> Result<(), BadTokenId> {
        out.clear();
        self.encode_append(ids, out)
    }

    /// Appends the payload of `ids` to `out`, as [`Self::encode`] does; on a refusal `out` is
    /// left as it was.
    pub fn encode_append<T: TokenId>(
        &self,
        ids: &[T],
        out: &mut Vec<u8>,
    ) -> Result<(), BadTokenId> {
        let start = out.len();
        let width = self.dtype.width();
        out.resize(start + ids.len() * width, 0);
        let written = match self.dtype {
            // `max_id` is at most u16::MAX for this width, so the conversion never saturates.
            TokenDtype::U16 => self.write::<2, T>(ids, &mut out[start..], |id| {
                u16::try_from(id).unwrap_or(u16::MAX).to_le_bytes()
            }),
            TokenDtype::U32 => self.write::<4, T>(ids, &mut out[start..], u32::to_le_bytes),
        };
        if written.is_err() {
            out.truncate(start);
        }
        written
    }

    #[inline]
    fn write<const W: usize, T: TokenId>(
        &self,
        ids: &[T],
        out: &mut [u8],
        bytes: impl Fn(u32) -> [u8; W],
    ) -> Result<(), BadTokenId> {
        for (position, (slot, &id)) in out.chunks_exact_mut(W).zip(ids).enumerate() {
            match id.to_id() {
                Some(value) if value <= self.max_id => slot.copy_from_slice(&bytes(value)),
                _ => {
                    return Err(BadTokenId {
                        position,
                        id: id.widened(),
                        max_id: self.max_id,
                    })
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode(dtype: TokenDtype, bytes: &[u8]) -> Vec<u32> {
        match dtype {
            TokenDtype::U16 => bytes
                .chunks_exact(2)
                .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            TokenDtype::U32 => bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        }
    }

    #[test]
    fn refuses_the_first_id_that_does_not_fit() {
        let encoder = TokenEncoder::new(&TokenInfo::for_vocab(1000));
        let mut out = vec![9];
        let err = encoder
            .encode_append(&[1i64, 999, 1000, -1], &mut out)
            .unwrap_err();
        assert_eq!((err.position, err.id, err.max_id), (2, 1000, 999));
        assert_eq!(out, [9], "a refused document leaves nothing behind");
        let err = encoder.encode(&[5i32, -3], &mut out).unwrap_err();
        assert_eq!((err.position, err.id), (1, -3));
        let wide = TokenEncoder::new(&TokenInfo::new(TokenDtype::U32));
        let err = wide
            .encode(&[u64::from(u32::MAX) + 1], &mut out)
            .unwrap_err();
        assert_eq!(err.id, i128::from(u32::MAX) + 1);
        let narrow = TokenEncoder::new(&TokenInfo::new(TokenDtype::U16));
        assert_eq!(
            narrow.encode(&[65_536u32], &mut out).unwrap_err().id,
            65_536
        );
    }

    #[test]
    fn ids_of_every_width_read_little_endian() {
        let bytes = [1u8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            TokenIds::from_le_bytes(true, 4, &bytes),
            Some(TokenIds::I32(vec![1, -1]))
        );
        assert_eq!(
            TokenIds::from_le_bytes(false, 4, &bytes),
            Some(TokenIds::U32(vec![1, u32::MAX]))
        );
        assert_eq!(
            TokenIds::from_le_bytes(true, 8, &bytes),
            Some(TokenIds::I64(vec![i64::from_le_bytes(bytes)]))
        );
        assert_eq!(
            TokenIds::from_le_bytes(false, 2, &bytes[..4]),
            Some(TokenIds::U16(vec![1, 0]))
        );
        assert_eq!(
            TokenIds::from_le_bytes(true, 1, &bytes[..2]),
            Some(TokenIds::I8(vec![1, 0]))
        );
        assert_eq!(
            TokenIds::from_le_bytes(false, 1, &[]),
            Some(TokenIds::U8(vec![]))
        );
        assert_eq!(TokenIds::from_le_bytes(true, 16, &bytes), None);
        assert_eq!(TokenIds::from_le_bytes(false, 3, &bytes), None);
    }

    proptest! {
        #[test]
        fn ids_that_fit_round_trip(ids in proptest::collection::vec(0u32..=u32::MAX, 0..300),
                                   narrow in any::<bool>()) {
            let dtype = if narrow { TokenDtype::U16 } else { TokenDtype::U32 };
            let ids: Vec<u32> = ids.into_iter().map(|id| id.min(dtype.max_id())).collect();
            let encoder = TokenEncoder::new(&TokenInfo::new(dtype));
            let mut out = Vec::new();
            encoder.encode(&ids, &mut out).unwrap();
            prop_assert_eq!(out.len(), ids.len() * dtype.width());
            prop_assert_eq!(decode(dtype, &out), ids.clone());
            let as_i64: Vec<i64> = ids.iter().map(|&id| i64::from(id)).collect();
            let mut again = Vec::new();
            encoder.encode(&as_i64, &mut again).unwrap();
            prop_assert_eq!(again, out);
        }
    }
}
