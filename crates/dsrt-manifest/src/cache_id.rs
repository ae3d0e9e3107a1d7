/// The v3 cache id of a new cache: the first eight bytes of SHA-256 over the source name's
/// exact UTF-8 bytes, read big-endian, with bit 63 cleared.
///
/// The name is not normalized: `"Cafe\u{301}"` and `"Café"` give different ids.
pub fn cache_id_for_source(source: &str) -> u64 {
    let digest = dsrt_atlas_codec::sha::sha256(source.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) & !(1u64 << 63)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn imagenet_train_vector_follows_the_rule() {
        // SHA-256("imagenet-train") computed independently of `cache_id_for_source`.
        let digest = dsrt_atlas_codec::sha::sha256(b"imagenet-train");
        let hex = dsrt_atlas_codec::to_hex(&digest);
        let high = u64::from_str_radix(&hex[..16], 16).unwrap();
        let id = cache_id_for_source("imagenet-train");
        assert_eq!(id, high & 0x7fff_ffff_ffff_ffff);
        assert!(id < 1 << 63);
        assert_eq!(id, cache_id_for_source("imagenet-train"));
        assert_ne!(id, cache_id_for_source("imagenet-train "));
        assert_ne!(
            cache_id_for_source("Cafe\u{301}"),
            cache_id_for_source("Café")
        );
    }
}
