//! Checked little-endian field access.
//!
//! Every read names no position itself; callers turn `None` into an error that names the file
//! and offset, because only they know which file the bytes came from.

/// Reads a little-endian `u64` at `offset`, or `None` when the slice is too short.
pub fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    let end = offset.checked_add(8)?;
    let field = bytes.get(offset..end)?;
    Some(u64::from_le_bytes(field.try_into().ok()?))
}

/// Reads a little-endian `u32` at `offset`, or `None` when the slice is too short.
pub fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    let end = offset.checked_add(4)?;
    let field = bytes.get(offset..end)?;
    Some(u32::from_le_bytes(field.try_into().ok()?))
}

/// Converts an untrusted `u64` length or offset to `usize`, refusing what does not fit.
pub fn to_usize(value: u64) -> Option<usize> {
    usize::try_from(value).ok()
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_refuses_short_slices() {
        let bytes = [1, 0, 0, 0, 0, 0, 0, 0x80, 7, 0, 0, 0];
        assert_eq!(u64_at(&bytes, 0), Some(0x8000_0000_0000_0001));
        assert_eq!(u32_at(&bytes, 8), Some(7));
        assert_eq!(u64_at(&bytes, 5), None);
        assert_eq!(u32_at(&bytes, 9), None);
        assert_eq!(u64_at(&bytes, usize::MAX), None);
    }
}
