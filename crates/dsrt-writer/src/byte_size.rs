//! The one grammar of byte sizes a user types: `dsrt --max-shard-bytes` and `--cache-limit`,
//! Python's `cache_limit="20GB"`. The same text means the same number of bytes everywhere.

/// A text that is not a byte size (see [`parse_byte_size`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not a byte size: a number (whole or decimal) and an optional unit, B, KB, MB, \
     GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024), e.g. \"20GB\" or \
     \"512MiB\"{}",
    if *.too_large { " (this one is past 2^64 - 1 bytes)" } else { "" }
)]
pub struct ByteSizeError {
    /// The text as given.
    pub text: String,
    /// Whether it parsed but is past `u64::MAX` bytes.
    pub too_large: bool,
}

/// Parses a byte size: a number, whole (`4096`) or decimal (`1.5`), then optionally a unit,
/// `B`, `KB`, `MB`, `GB`, `TB`, `PB` (powers of 1000, as disks and object stores count) or
/// `KiB`, `MiB`, `GiB`, `TiB`, `PiB` (powers of 1024); units in any case, blanks allowed
/// around the number and the unit. A fraction of a byte is dropped (`"1.5B"` is 1). Zero is a
/// size; a caller for which it means nothing refuses it. Single letters (`20G`) are refused:
/// they do not say which of the two powers they mean.
///
/// ```
/// use dsrt_writer::parse_byte_size;
/// assert_eq!(parse_byte_size("20GB"), Ok(20_000_000_000));
/// assert_eq!(parse_byte_size("20GiB"), Ok(20 << 30));
/// assert_eq!(parse_byte_size("1.5 mib"), Ok(3 << 19));
/// assert!(parse_byte_size("20G").is_err());
/// ```
pub fn parse_byte_size(text: &str) -> Result<u64, ByteSizeError> {
    let bad = |too_large| ByteSizeError {
        text: text.to_owned(),
        too_large,
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "pb" => 1_000_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "pib" => 1 << 50,
        _ => return Err(bad(false)),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(bad(false));
    }
    let digits = |part: &str| -> Result<u128, ByteSizeError> {
        if part.is_empty() {
            return Ok(0);
        }
        // Past 38 digits a u128 overflows; such a number is past 2^64 anyway.
        part.parse().map_err(|_| bad(part.len() > 38))
    };
    // Exact decimal arithmetic: whole * scale + fraction * scale / 10^len (rounded down).
    let mut bytes = digits(whole)?
        .checked_mul(u128::from(scale))
        .ok_or_else(|| bad(true))?;
    if !fraction.is_empty() {
        let places = u32::try_from(fraction.len()).map_err(|_| bad(false))?;
        let denominator = 10u128.checked_pow(places).ok_or_else(|| bad(false))?;
        let part = digits(fraction)?
            .checked_mul(u128::from(scale))
            .ok_or_else(|| bad(false))?;
        bytes = bytes
            .checked_add(part / denominator)
            .ok_or_else(|| bad(true))?;
    }
    u64::try_from(bytes).map_err(|_| bad(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units_of_1000_and_1024_in_any_case() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_byte_size("10 mb"), Ok(10_000_000));
        assert_eq!(parse_byte_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_byte_size(" 256 MiB "), Ok(256 << 20));
        assert_eq!(parse_byte_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_byte_size("20GB"), Ok(20_000_000_000));
        assert_eq!(parse_byte_size("1.5 TiB"), Ok(3 << 39));
        assert_eq!(parse_byte_size(".5KB"), Ok(500));
        assert_eq!(parse_byte_size("1.5B"), Ok(1));
        assert_eq!(
            parse_byte_size("16EiB").map_err(|e| e.too_large),
            Err(false)
        );
        assert_eq!(parse_byte_size("0"), Ok(0));
        assert_eq!(
            parse_byte_size("16384PiB").map_err(|e| e.too_large),
            Err(true)
        );
    }

    #[test]
    fn what_is_not_a_size_is_refused_naming_the_text() {
        for bad in [
            "", "lots", "20G", "1.2.3MB", "-5MB", ".", "MB", "5 M B", "1e3",
        ] {
            let error = parse_byte_size(bad).unwrap_err();
            assert!(
                error.to_string().starts_with(&format!("{bad:?} is not")),
                "{error}"
            );
        }
        let huge = "9".repeat(60);
        assert!(parse_byte_size(&huge).unwrap_err().too_large);
    }

    proptest! {
        #[test]
        fn every_count_of_bytes_and_binary_units_reads_back(n in any::<u64>(), shift in 0u32..6) {
            let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
            let unit = units[shift as usize];
            let value = n >> (10 * shift);
            prop_assert_eq!(parse_byte_size(&format!("{value}{unit}")), Ok(value << (10 * shift)));
            prop_assert_eq!(parse_byte_size(&format!("{n}")), Ok(n));
        }
    }
}
