/// Bytes per index row.
pub const ROW_BYTES: usize = 24;

/// The shortest valid record: the 8-byte JSON length alone.
pub const MIN_RECORD_LEN: u64 = 8;

/// One sample's location: its whole record is `length` bytes at `offset` of shard `shard_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexRow {
    /// Position of the shard in the manifest's `shards`.
    pub shard_id: u64,
    /// Byte offset of the record within the shard.
    pub offset: u64,
    /// Byte length of the whole record.
    pub length: u64,
}

impl IndexRow {
    /// The row's 24 bytes.
    pub fn encode(&self) -> [u8; ROW_BYTES] {
        let mut out = [0u8; ROW_BYTES];
        out[..8].copy_from_slice(&self.shard_id.to_le_bytes());
        out[8..16].copy_from_slice(&self.offset.to_le_bytes());
        out[16..].copy_from_slice(&self.length.to_le_bytes());
        out
    }

    /// Decodes a row from exactly 24 bytes.
    pub fn decode(bytes: &[u8; ROW_BYTES]) -> Self {
        let field = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(b)
        };
        Self {
            shard_id: field(0),
            offset: field(1),
            length: field(2),
        }
    }

    /// End of the record, or `None` when `offset + length` overflows.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.length)
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(shard_id in any::<u64>(), offset in any::<u64>(), length in any::<u64>()) {
            let row = IndexRow { shard_id, offset, length };
            prop_assert_eq!(IndexRow::decode(&row.encode()), row);
        }
    }

    #[test]
    fn layout_is_three_little_endian_u64() {
        let row = IndexRow {
            shard_id: 1,
            offset: 0x0203,
            length: 0x8000_0000_0000_0000,
        };
        let bytes = row.encode();
        assert_eq!(&bytes[..8], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[8..16], &[3, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[16..], &[0, 0, 0, 0, 0, 0, 0, 0x80]);
        assert_eq!(row.end(), Some(0x8000_0000_0000_0203));
        assert_eq!(
            IndexRow {
                shard_id: 0,
                offset: u64::MAX,
                length: 1
            }
            .end(),
            None
        );
    }
}
