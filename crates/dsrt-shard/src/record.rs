use crate::RecordError;

/// Bytes of the JSON length field that opens every record.
pub const RECORD_HEADER_LEN: usize = 8;

/// Splits a whole record into its metadata JSON and its stored payload.
pub fn split_record(record: &[u8]) -> Result<(&[u8], &[u8]), RecordError> {
    let record_len = record.len() as u64;
    let json_len =
        dsrt_atlas_codec::le::u64_at(record, 0).ok_or(RecordError::Short { record_len })?;
    let body = &record[RECORD_HEADER_LEN..];
    let json_end = usize::try_from(json_len)
        .ok()
        .filter(|len| *len <= body.len())
        .ok_or(RecordError::JsonLength {
            json_len,
            record_len,
        })?;
    Ok(body.split_at(json_end))
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn splits_and_refuses_hostile_lengths() {
        let mut record = 2u64.to_le_bytes().to_vec();
        record.extend_from_slice(b"{}payload");
        assert_eq!(
            split_record(&record).unwrap(),
            (&b"{}"[..], &b"payload"[..])
        );
        for hostile in [1u64 << 63, u64::MAX, 10] {
            let mut bad = hostile.to_le_bytes().to_vec();
            bad.extend_from_slice(b"{}");
            assert!(
                matches!(split_record(&bad), Err(RecordError::JsonLength { .. })),
                "{hostile}"
            );
        }
        assert!(matches!(
            split_record(&[0; 7]),
            Err(RecordError::Short { record_len: 7 })
        ));
    }
}
