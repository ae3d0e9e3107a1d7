//! Byte sizes on the command line: `4096`, `64KiB`, `256MiB`, `1GiB` (`--max-shard-bytes`,
//! `--cache-limit`).

/// Parses `4096`, `64KiB`, `256MiB` or `1GiB` (binary units); refuses zero, which the
/// writer would refuse only after the input was read, and in which no shard fits.
pub(crate) fn parse_byte_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let multiplier: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown unit {other:?}; use bytes or KiB, MiB, GiB"
            ))
        }
    };
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a byte count"))?;
    let bytes = number
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{text} is too large"))?;
    if bytes == 0 {
        return Err("must be greater than 0".into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_byte_size;

    #[test]
    fn byte_sizes_parse_with_binary_units() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_byte_size("256 MiB"), Ok(256 << 20));
        assert_eq!(parse_byte_size("1GiB"), Ok(1 << 30));
        assert!(parse_byte_size("0").is_err());
        assert!(parse_byte_size("12MB").is_err());
        assert!(parse_byte_size("-1").is_err());
        assert!(parse_byte_size("").is_err());
        assert!(parse_byte_size("99999999999GiB").is_err());
    }
}
