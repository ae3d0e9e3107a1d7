//! The fixed numbers of format version 8.

/// Container magic, at both ends of `data.atlas`.
pub const MAGIC: [u8; 4] = *b"ATLS";
/// Container format version, in the header, the trailer and the footer.
pub const FORMAT_VERSION: u32 = 8;
/// Header: magic then version.
pub const HEADER_SIZE: u64 = 8;
/// Trailer: footer size, version, magic.
pub const TRAILER_SIZE: u64 = 16;
/// Bytes an open reads from the end of the container in its first request.
pub const TAIL_PROBE: u64 = 64 * 1024;
/// Largest decoded footer a reader accepts. The zstd frame's content size is untrusted, so the
/// decoder stops here instead of growing with whatever the frame claims.
pub const MAX_DECODED_FOOTER: u64 = 1 << 30;
/// Largest footer frame a reader fetches: zstd's bound for a frame of [`MAX_DECODED_FOOTER`]
/// bytes (the content plus 1/256, plus a megabyte for headers). A trailer claiming more is
/// refused before the range is requested.
pub const MAX_FOOTER_SIZE: u64 = MAX_DECODED_FOOTER + (MAX_DECODED_FOOTER >> 8) + (1 << 20);
/// Name of the container object under a collection prefix.
pub const CONTAINER_OBJECT: &str = "data.atlas";
/// Name of the deletion mask object under a collection prefix.
pub const MASK_OBJECT: &str = "deleted.mask";
/// The reserved segment that holds dataset-level attributes.
pub const DATASETS_SEGMENT: &str = "_datasets";
/// zstd level the writer compresses the footer with. Any level decodes the same.
pub const FOOTER_ZSTD_LEVEL: i32 = 3;
