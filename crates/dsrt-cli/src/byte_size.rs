//! Byte sizes on the command line (`--max-shard-bytes`, `--cache-limit`): the one grammar of
//! `datasetrt::parse_byte_size` (`10MB` is ten million bytes, `10MiB` ten times 2^20, as in
//! Python), zero refused.

/// Parses a byte size; refuses zero, which the writer would refuse only after the input was
/// read, in which no shard fits, and which would leave the shard cache no room.
pub(crate) fn parse_byte_size(text: &str) -> Result<u64, String> {
    match datasetrt::parse_byte_size(text) {
        Ok(0) => Err("must be greater than 0".into()),
        Ok(bytes) => Ok(bytes),
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_byte_size;

    #[test]
    fn the_shared_grammar_without_zero() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_byte_size("256 MiB"), Ok(256 << 20));
        assert_eq!(parse_byte_size("12MB"), Ok(12_000_000));
        assert!(parse_byte_size("0").is_err());
        assert!(parse_byte_size("-1").is_err());
        assert!(parse_byte_size("").is_err());
        assert!(parse_byte_size("99999999999GiB").is_err());
    }
}
