//! What a loader has done, counted while it runs: batches, samples and tokens delivered, how
//! long the consumer waited for them, what its reading threads spent their time on, each
//! source's share, and what the process's shard sources fetched meanwhile.
//!
//! Counters only: a loader adds to them once per batch (or per chunk piece of samples), from
//! the thread that did the work, with relaxed atomic additions; nothing is allocated or locked
//! per sample. A reading ([`LoaderStats::snapshot`]) may be taken from any thread at any time.

use dsrt_reader::{fetch_counters, FetchTotals};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Where a loader's reading threads spend their time (summed over threads): its stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Building the epoch's plan and finding each step's sample or row pieces.
    Plan,
    /// Reading records (decoding LZ4 payloads, copying tokens) once their shard is at hand:
    /// reading time minus the wait for downloads, which is counted apart.
    Read,
    /// Turning what was read into batches (a token batch's derived columns).
    Assemble,
}

/// A loader's counters, shared by the loader, its threads and whoever reads them.
#[derive(Debug)]
pub struct LoaderStats {
    created: Instant,
    /// Nanoseconds from `created` to the end of the first batch's hand-over, plus one (0: none
    /// yet).
    first_batch: AtomicU64,
    /// Nanoseconds from `created` to the end of the last batch's hand-over.
    last_batch: AtomicU64,
    batches: AtomicU64,
    samples: AtomicU64,
    tokens: AtomicU64,
    bytes_read: AtomicU64,
    /// The consumer's wait for batches after the first, in nanoseconds.
    wait: AtomicU64,
    plan: AtomicU64,
    read: AtomicU64,
    assemble: AtomicU64,
    /// Per source (cache of the dataset): samples for sample loaders, tokens for token
    /// loaders.
    per_source: Box<[AtomicU64]>,
    /// The process's fetch counters when the loader was created.
    fetch_base: FetchTotals,
}

/// A reading of [`LoaderStats`].
#[derive(Debug, Clone, PartialEq)]
pub struct StatsSnapshot {
    /// Since the loader was created.
    pub elapsed: Duration,
    /// From the loader's creation to the first batch in the consumer's hands (`None` before).
    pub time_to_first_batch: Option<Duration>,
    /// Batches handed to the consumer (for a sample loader, chunk pieces: its hand-overs).
    pub batches: u64,
    /// Samples (or token rows) handed to the consumer.
    pub samples: u64,
    /// Tokens handed to the consumer (input tokens of token rows; 0 for sample loaders).
    pub tokens: u64,
    /// Payload bytes (decoded) the loader's threads read; 0 for token loaders.
    pub bytes_read: u64,
    /// The consumer's wait for batches after the first one.
    pub wait: Duration,
    /// From the first batch's hand-over to the last one's: the consumer's wall time the wait
    /// is a share of.
    pub wall: Duration,
    /// Reading threads' time building the plan and finding steps, summed over threads.
    pub plan: Duration,
    /// Reading threads' time reading records, without waits for downloads.
    pub read: Duration,
    /// Reading threads' time assembling batches.
    pub assemble: Duration,
    /// Reading threads' wait for shard downloads (the process's, since the loader started).
    pub download: Duration,
    /// Per source, in the dataset's order: samples (sample loaders) or tokens (token loaders).
    pub per_source: Vec<u64>,
    /// What the process's shard sources fetched since the loader was created.
    pub fetch: FetchTotals,
}

/// A [`StatsSnapshot`] in the units people read: seconds, rates and shares beside the
/// counts. Its fields are the keys of the Python `stats()` dict (docs/python.md, "Loader
/// stats"), in that order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StatsReport {
    /// Seconds since the loader was created.
    pub elapsed_s: f64,
    /// Seconds to the first batch in the consumer's hands (`None` before).
    pub time_to_first_batch_s: Option<f64>,
    /// Batches handed to the consumer.
    pub batches: u64,
    /// Samples (or token rows) handed to the consumer.
    pub samples: u64,
    /// Input tokens handed to the consumer (0 for sample loaders).
    pub tokens: u64,
    /// Batches per second since the loader was created.
    pub batches_per_s: f64,
    /// Samples per second, likewise.
    pub samples_per_s: f64,
    /// Tokens per second, likewise.
    pub tokens_per_s: f64,
    /// Seconds the consumer waited for batches after the first one.
    pub wait_s: f64,
    /// Seconds from the first batch's hand-over to the last one's.
    pub wall_s: f64,
    /// `wait_s` over `wall_s`, 0 to 1.
    pub stall_share: f64,
    /// Payload bytes the loader's threads read.
    pub bytes_read: u64,
    /// Bytes received from stores.
    pub bytes_downloaded: u64,
    /// Shard downloads completed.
    pub downloads: u64,
    /// Downloads under way.
    pub downloads_in_flight: u64,
    /// Shards needed that were already local.
    pub shard_cache_hits: u64,
    /// Per source, in the dataset's order: samples or tokens delivered.
    pub source_counts: Vec<u64>,
    /// Each source's share of what was delivered, summing to 1.
    pub source_shares: Vec<f64>,
    /// Reading threads' seconds planning, summed over threads.
    pub plan_s: f64,
    /// Reading threads' seconds waiting for downloads.
    pub download_s: f64,
    /// Reading threads' seconds reading records.
    pub read_s: f64,
    /// Reading threads' seconds assembling batches.
    pub assemble_s: f64,
}

impl StatsSnapshot {
    /// This reading as a [`StatsReport`].
    pub fn report(&self) -> StatsReport {
        StatsReport {
            elapsed_s: self.elapsed.as_secs_f64(),
            time_to_first_batch_s: self.time_to_first_batch.map(|t| t.as_secs_f64()),
            batches: self.batches,
            samples: self.samples,
            tokens: self.tokens,
            batches_per_s: self.batches_per_second(),
            samples_per_s: self.samples_per_second(),
            tokens_per_s: self.tokens_per_second(),
            wait_s: self.wait.as_secs_f64(),
            wall_s: self.wall.as_secs_f64(),
            stall_share: self.stall_share(),
            bytes_read: self.bytes_read,
            bytes_downloaded: self.fetch.fetched_bytes,
            downloads: self.fetch.downloads,
            downloads_in_flight: self.fetch.in_flight,
            shard_cache_hits: self.fetch.hits,
            source_counts: self.per_source.clone(),
            source_shares: self.source_shares(),
            plan_s: self.plan.as_secs_f64(),
            download_s: self.download.as_secs_f64(),
            read_s: self.read.as_secs_f64(),
            assemble_s: self.assemble.as_secs_f64(),
        }
    }

    /// The consumer's wait over its wall time since the first batch, 0 to 1: near 0 when the
    /// loader keeps up, near 1 when the consumer mostly waits.
    pub fn stall_share(&self) -> f64 {
        ratio(self.wait, self.wall)
    }

    /// Batches per second since the loader was created.
    pub fn batches_per_second(&self) -> f64 {
        per_second(self.batches, self.elapsed)
    }

    /// Samples per second, likewise.
    pub fn samples_per_second(&self) -> f64 {
        per_second(self.samples, self.elapsed)
    }

    /// Tokens per second, likewise.
    pub fn tokens_per_second(&self) -> f64 {
        per_second(self.tokens, self.elapsed)
    }

    /// Each source's share of what was delivered (samples or tokens), summing to 1.
    pub fn source_shares(&self) -> Vec<f64> {
        let total: u64 = self.per_source.iter().sum();
        self.per_source
            .iter()
            .map(|&n| {
                if total == 0 {
                    0.0
                } else {
                    n as f64 / total as f64
                }
            })
            .collect()
    }

    /// The stages the reading threads spent their time in, the largest first: `open` is not
    /// among them (the caches are opened before a loader exists).
    pub fn stages(&self) -> [(&'static str, Duration); 4] {
        let mut stages = [
            ("plan", self.plan),
            ("download", self.download),
            ("read", self.read),
            ("assemble", self.assemble),
        ];
        stages.sort_by_key(|stage| std::cmp::Reverse(stage.1));
        stages
    }
}

fn ratio(part: Duration, whole: Duration) -> f64 {
    if whole.is_zero() {
        0.0
    } else {
        (part.as_secs_f64() / whole.as_secs_f64()).min(1.0)
    }
}

fn per_second(count: u64, over: Duration) -> f64 {
    if over.is_zero() {
        0.0
    } else {
        count as f64 / over.as_secs_f64()
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl LoaderStats {
    /// Counters for a loader over `sources` sources, starting now.
    pub fn new(sources: usize) -> Self {
        Self {
            created: Instant::now(),
            first_batch: AtomicU64::new(0),
            last_batch: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            samples: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            wait: AtomicU64::new(0),
            plan: AtomicU64::new(0),
            read: AtomicU64::new(0),
            assemble: AtomicU64::new(0),
            per_source: (0..sources).map(|_| AtomicU64::new(0)).collect(),
            fetch_base: fetch_counters().totals(),
        }
    }

    /// The consumer received a batch of `samples` samples and `tokens` tokens after waiting
    /// from `asked` (when it asked for it) until now.
    pub fn delivered(&self, asked: Instant, samples: u64, tokens: u64) {
        let now = Instant::now();
        let at = nanos(now.duration_since(self.created));
        if self.first_batch.load(Relaxed) == 0 {
            self.first_batch.store(at.saturating_add(1), Relaxed);
        } else {
            self.wait
                .fetch_add(nanos(now.duration_since(asked)), Relaxed);
        }
        self.last_batch.store(at, Relaxed);
        self.batches.fetch_add(1, Relaxed);
        self.samples.fetch_add(samples, Relaxed);
        self.tokens.fetch_add(tokens, Relaxed);
    }

    /// A reading thread spent `spent` in `stage`.
    pub fn add_time(&self, stage: Stage, spent: Duration) {
        let counter = match stage {
            Stage::Plan => &self.plan,
            Stage::Read => &self.read,
            Stage::Assemble => &self.assemble,
        };
        counter.fetch_add(nanos(spent), Relaxed);
    }

    /// A reading thread read `bytes` payload bytes.
    pub fn add_bytes_read(&self, bytes: u64) {
        self.bytes_read.fetch_add(bytes, Relaxed);
    }

    /// `count` more samples (or tokens) came from source `source`.
    pub fn add_source(&self, source: usize, count: u64) {
        if let Some(counter) = self.per_source.get(source) {
            counter.fetch_add(count, Relaxed);
        }
    }

    /// A batch of `rows` was read for a consumer that asked for it at `asked`: the steps were
    /// found by `planned`, read by now. What a reader of single batches (the Python
    /// `RankPlan`'s reads) counts: time by stage, samples per cache (one relaxed addition
    /// per row), the batch's delivery.
    pub fn batch_read(&self, asked: Instant, planned: Instant, rows: &[crate::BatchRow]) {
        self.add_time(Stage::Plan, planned.saturating_duration_since(asked));
        self.add_time(Stage::Read, planned.elapsed());
        for row in rows {
            self.add_source(row.cache, 1);
        }
        self.delivered(asked, rows.len() as u64, 0);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> StatsSnapshot {
        let fetch = fetch_counters().totals().since(&self.fetch_base);
        let first = self.first_batch.load(Relaxed);
        let last = self.last_batch.load(Relaxed);
        let read = Duration::from_nanos(self.read.load(Relaxed));
        let download = Duration::from_nanos(fetch.wait_ns);
        StatsSnapshot {
            elapsed: self.created.elapsed(),
            time_to_first_batch: (first > 0).then(|| Duration::from_nanos(first - 1)),
            batches: self.batches.load(Relaxed),
            samples: self.samples.load(Relaxed),
            tokens: self.tokens.load(Relaxed),
            bytes_read: self.bytes_read.load(Relaxed),
            wait: Duration::from_nanos(self.wait.load(Relaxed)),
            wall: Duration::from_nanos(last.saturating_sub(first.saturating_sub(1))),
            plan: Duration::from_nanos(self.plan.load(Relaxed)),
            // Reads that waited for a download counted the wait too: it is `download`'s.
            read: read.saturating_sub(download),
            assemble: Duration::from_nanos(self.assemble.load(Relaxed)),
            download,
            per_source: self.per_source.iter().map(|c| c.load(Relaxed)).collect(),
            fetch,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;

    #[test]
    fn a_report_gives_seconds_rates_and_shares_under_the_documented_keys() {
        let snapshot = StatsSnapshot {
            elapsed: Duration::from_secs(4),
            time_to_first_batch: None,
            batches: 8,
            samples: 512,
            tokens: 0,
            bytes_read: 1 << 20,
            wait: Duration::from_millis(500),
            wall: Duration::from_secs(2),
            plan: Duration::from_millis(250),
            read: Duration::from_secs(1),
            assemble: Duration::ZERO,
            download: Duration::ZERO,
            per_source: vec![384, 128],
            fetch: FetchTotals {
                downloads: 3,
                ..FetchTotals::default()
            },
        };
        let report = snapshot.report();
        assert_eq!((report.batches_per_s, report.samples_per_s), (2.0, 128.0));
        assert_eq!((report.wait_s, report.stall_share), (0.5, 0.25));
        assert_eq!(report.source_shares, vec![0.75, 0.25]);
        // The keys in their documented order, as the JSON text (and a dict from it) has them.
        let text = serde_json::to_string(&report).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<(usize, &str)> = (json.as_object().unwrap().keys())
            .map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k.as_str()))
            .collect();
        keys.sort_unstable();
        let keys: Vec<&str> = keys.into_iter().map(|(_, k)| k).collect();
        assert_eq!(
            keys,
            [
                "elapsed_s",
                "time_to_first_batch_s",
                "batches",
                "samples",
                "tokens",
                "batches_per_s",
                "samples_per_s",
                "tokens_per_s",
                "wait_s",
                "wall_s",
                "stall_share",
                "bytes_read",
                "bytes_downloaded",
                "downloads",
                "downloads_in_flight",
                "shard_cache_hits",
                "source_counts",
                "source_shares",
                "plan_s",
                "download_s",
                "read_s",
                "assemble_s",
            ]
        );
        assert_eq!(json["time_to_first_batch_s"], serde_json::Value::Null);
        assert_eq!(json["plan_s"], 0.25);
    }
}
