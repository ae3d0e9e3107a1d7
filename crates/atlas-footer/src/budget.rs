//! What one footer may cost a reader in memory, charged before anything is allocated.
//!
//! A footer's bytes are small next to what they can ask a reader to hold: 16 MiB of msgpack
//! empty strings is 16 million `String`s (384 MiB), and a zstd frame of a few KB decodes to
//! hundreds of MB. Nothing in a footer says how big it honestly is except its stored size, so
//! the rule is one number per footer, [`FooterBudget::for_footer_size`]:
//!
//! > an open may hold at most [`FOOTER_BUDGET_BASE`] + [`FOOTER_BUDGET_PER_STORED_BYTE`] ×
//! > `footer_size` bytes for one footer: the decoded msgpack, the decoded footer, and every
//! > table a reader builds from it, summed.
//!
//! The decode charges each allocation before making it, from the counts the msgpack declares
//! (an array header is checked against the bytes left first, so a claim cannot charge more than
//! the bytes could hold either); a charge past the limit refuses the footer with
//! [`FooterError::CorruptCollection`] naming `footer`. A reader charges its own tables to the
//! same budget (`atlas-reader` does). The multiple was chosen from measured honest extremes
//! (`docs/format/atlas.md`, "Reader memory limit"): no footer a writer produces for them comes
//! near it, so a footer past it is not one a writer made.
//!
//! Costs are of the heap as `malloc` sees it ([`heap_bytes`]: the request rounded to glibc's
//! 16-byte chunks with their 8-byte header, at least 32), so many small allocations cost what
//! they really take.

use crate::error::FooterError;

/// Bytes every footer may cost whatever its size: room for every small footer, however
/// compressible its names, and a bound on what a tiny hostile one can take.
pub const FOOTER_BUDGET_BASE: u64 = 64 << 20;

/// Bytes a footer may cost per byte it occupies in the container, above the base. zstd
/// compresses the regular structure of an honest footer 50 to 150 times, and what an open
/// builds is up to 15 times the decoded bytes: the most measured is 2,332 times the stored size
/// (10,000 datasets, each with its own set of 200 attribute keys; `docs/format/atlas.md`,
/// "Reader memory limit"). This leaves a factor of 1.75.
pub const FOOTER_BUDGET_PER_STORED_BYTE: u64 = 4096;

/// The memory one footer may still cost, and what it has cost so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterBudget {
    footer_size: u64,
    limit: u64,
    used: u64,
}

impl FooterBudget {
    /// The budget of a footer that occupies `footer_size` bytes in the container (the
    /// trailer's `footer_size`: the zstd frame's length).
    pub fn for_footer_size(footer_size: u64) -> Self {
        Self {
            footer_size,
            limit: FOOTER_BUDGET_BASE
                .saturating_add(FOOTER_BUDGET_PER_STORED_BYTE.saturating_mul(footer_size)),
            used: 0,
        }
    }

    /// The most this footer may cost, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// What has been charged so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// What may still be charged.
    pub fn remaining(&self) -> u64 {
        self.limit - self.used
    }

    /// Charges `bytes` for `what` (a phrase such as "string_pool: 16777216 strings"), or
    /// refuses the footer if they do not fit; nothing is charged then.
    pub fn charge(&mut self, bytes: u64, what: impl FnOnce() -> String) -> Result<(), FooterError> {
        match self.used.checked_add(bytes).filter(|&u| u <= self.limit) {
            Some(used) => {
                self.used = used;
                Ok(())
            }
            None => Err(self.refusal(bytes, &what())),
        }
    }

    #[cold]
    fn refusal(&self, bytes: u64, what: &str) -> FooterError {
        FooterError::corrupt(
            "footer",
            format!(
                "{what} would take {bytes} bytes of memory ({} already taken), more than the \
                 {} bytes a footer of {} stored bytes may take ({} MiB + {} per stored byte); \
                 no writer makes such a footer",
                self.used,
                self.limit,
                self.footer_size,
                FOOTER_BUDGET_BASE >> 20,
                FOOTER_BUDGET_PER_STORED_BYTE,
            ),
        )
    }
}

/// What an allocation of `bytes` takes from the heap: glibc's chunk, the request plus its
/// 8-byte header rounded up to 16, at least 32; nothing for zero bytes (no allocation).
pub fn heap_bytes(bytes: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    bytes.saturating_add(8).saturating_add(15).max(32) & !15
}

/// [`heap_bytes`] of `count` items of `T` in one allocation (a `Vec` of exactly that capacity).
pub fn heap_of<T>(count: u64) -> u64 {
    heap_bytes(count.saturating_mul(std::mem::size_of::<T>() as u64))
}

/// Heap bytes of a `hashbrown` table of `u32` entries created with room for `capacity`: its
/// buckets (a power of two at least 8/7 of the capacity), one control byte per bucket and one
/// 16-byte group more.
pub(crate) fn hash_table_of_u32(capacity: u64) -> u64 {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 4 {
        4
    } else if capacity < 8 {
        8
    } else {
        (capacity.saturating_mul(8) / 7).next_power_of_two()
    };
    heap_bytes(buckets.saturating_mul(5).saturating_add(16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_add_up_to_the_limit_and_no_further() {
        let mut budget = FooterBudget::for_footer_size(10);
        assert_eq!(budget.limit(), FOOTER_BUDGET_BASE + 40_960);
        budget.charge(budget.limit() - 1, || "most".into()).unwrap();
        budget.charge(1, || "the last byte".into()).unwrap();
        let error = budget.charge(1, || "one more".into()).unwrap_err();
        assert_eq!(budget.used(), budget.limit());
        let text = error.to_string();
        assert!(
            text.contains("footer: one more would take 1 bytes"),
            "{text}"
        );
        assert!(text.contains("a footer of 10 stored bytes"), "{text}");
        assert!(FooterBudget::for_footer_size(u64::MAX).limit() == u64::MAX);
        assert!(FooterBudget::for_footer_size(1)
            .charge(u64::MAX, || "all".into())
            .is_err());
    }

    #[test]
    fn heap_sizes_are_malloc_chunks() {
        assert_eq!(heap_bytes(0), 0);
        assert_eq!(heap_bytes(1), 32);
        assert_eq!(heap_bytes(24), 32);
        assert_eq!(heap_bytes(25), 48);
        assert_eq!(heap_of::<u32>(100), 416);
        assert_eq!(hash_table_of_u32(0), 0);
        assert_eq!(hash_table_of_u32(100), heap_bytes(128 * 5 + 16));
    }
}
