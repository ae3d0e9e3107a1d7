use crate::RecordError;
use dsrt_manifest::CompressionAlgo;

/// Appends the stored form of `payload` to `out`. An LZ4 payload over `u32::MAX` bytes (what
/// its size prefix can say) is an error.
pub fn store_payload(
    algo: CompressionAlgo,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), dsrt_atlas_codec::lz4::Lz4Error> {
    match algo {
        CompressionAlgo::None => {
            out.extend_from_slice(payload);
            Ok(())
        }
        CompressionAlgo::Lz4 => dsrt_atlas_codec::lz4::compress_into(payload, out),
    }
}

/// Decodes a stored payload. `none` borrows the stored bytes; `lz4` decodes into `scratch`
/// (whose capacity is reused) and borrows it.
pub fn load_payload<'a>(
    algo: CompressionAlgo,
    stored: &'a [u8],
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], RecordError> {
    match algo {
        CompressionAlgo::None => Ok(stored),
        CompressionAlgo::Lz4 => {
            dsrt_atlas_codec::lz4::decompress_into(stored, u64::from(u32::MAX), scratch)?;
            Ok(scratch)
        }
    }
}
