//! What `dsrt pack` reports when it is done.

use super::PackTarget;
use crate::output::{human_bytes, per_second, seconds};
use datasetrt::CacheSummary;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The pack summary; its JSON form is what `--json` prints.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PackReport {
    /// The cache directory.
    pub(crate) path: PathBuf,
    /// The source name.
    pub(crate) source: String,
    /// The v3 cache id.
    pub(crate) cache_id: Option<u64>,
    /// Samples written.
    pub(crate) samples: u64,
    /// Shard files written.
    pub(crate) shards: usize,
    /// `none` or `lz4`.
    pub(crate) compression: &'static str,
    /// Payload bytes before compression.
    pub(crate) payload_bytes: u64,
    /// Shard bytes on disk (records: envelopes plus stored payloads).
    pub(crate) shard_bytes: u64,
    /// Uncompressed shard bytes over shard bytes on disk.
    pub(crate) compression_ratio: f64,
    /// Wall time of the whole job, schema inference included.
    pub(crate) elapsed_seconds: f64,
    /// Payload megabytes (10^6 bytes) per second.
    pub(crate) throughput_mb_per_s: f64,
    /// Samples per second.
    pub(crate) samples_per_s: f64,
    /// Input samples left out as bad (`--skip-bad`); absent for inputs that never skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped_bad_samples: Option<u64>,
}

impl PackReport {
    /// The report of a finished cache.
    pub(crate) fn new(summary: &CacheSummary, target: &PackTarget, elapsed: Duration) -> Self {
        Self {
            path: summary.path.clone(),
            source: target.source.clone(),
            cache_id: summary.cache_id,
            samples: summary.samples,
            shards: summary.shards.len(),
            compression: target.compression.name(),
            payload_bytes: summary.payload_bytes,
            shard_bytes: summary.shard_bytes(),
            compression_ratio: summary.ratio(),
            elapsed_seconds: seconds(elapsed),
            throughput_mb_per_s: per_second(summary.payload_bytes, elapsed) / 1e6,
            samples_per_s: per_second(summary.samples, elapsed),
            skipped_bad_samples: None,
        }
    }

    /// The report with the bad input samples left out, for an input that can skip them.
    pub(crate) fn skipped(mut self, skipped: Option<u64>) -> Self {
        self.skipped_bad_samples = skipped;
        self
    }
}

impl fmt::Display for PackReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cache_id = self
            .cache_id
            .map_or_else(|| "positional (v2)".to_owned(), |id| id.to_string());
        writeln!(
            f,
            "packed {} samples into {}",
            self.samples,
            self.path.display()
        )?;
        writeln!(f, "  source       {:?} (cache id {cache_id})", self.source)?;
        writeln!(f, "  shards       {} ({})", self.shards, self.compression)?;
        writeln!(
            f,
            "  payload      {} ({} bytes)",
            human_bytes(self.payload_bytes),
            self.payload_bytes
        )?;
        writeln!(
            f,
            "  on disk      {} ({} bytes)",
            human_bytes(self.shard_bytes),
            self.shard_bytes
        )?;
        writeln!(f, "  ratio        {:.3}", self.compression_ratio)?;
        writeln!(f, "  elapsed      {:.3} s", self.elapsed_seconds)?;
        writeln!(
            f,
            "  throughput   {:.1} MB/s, {:.0} samples/s",
            self.throughput_mb_per_s, self.samples_per_s
        )?;
        if let Some(skipped) = self.skipped_bad_samples {
            writeln!(f, "  skipped {skipped} bad samples")?;
        }
        Ok(())
    }
}
