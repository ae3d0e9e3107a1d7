//! Documents computed instead of read: lengths from a long-tailed distribution and tokens from a
//! hash, for planning without caches (`dsrt plan --synthetic-tokens`) and for tests at the scale
//! of real corpora, where nothing may be materialized.
//!
//! The lengths are the quantiles of a log-normal, visited by each shard in an order of its own
//! (a stride through the table from a hashed phase), so the tokens of any run of documents sum
//! in O(1) from the table's prefix sums: a billion documents plan as fast as a thousand.

// Lengths and tokens are computed in f64 and u64 and land well inside their targets.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss
)]

use crate::source::{Coverage, DocumentSource, End, StoredTokens};
use crate::TokenStreamError;
use dsrt_plan::{mix, CacheShape};
use std::ops::Range;

/// Quantiles of the length distribution; a shard's documents visit them in a stride order.
const QUANTILES: usize = 4096;

/// The stride through the quantiles (odd, so a shard of 4096 documents visits each once).
const STRIDE: u64 = (2_654_435_761 % QUANTILES as u64) | 1;

/// One synthetic source: `docs` documents in `shards` equal shards, lengths with mean
/// `mean_tokens` (a log-normal of shape 1, so a long tail: the longest about 30 times the
/// mean), at most `max_tokens`.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Documents.
    pub docs: u64,
    /// Equal shards (the first `docs % shards` one document longer).
    pub shards: u64,
    /// Mean tokens per document.
    pub mean_tokens: u64,
    /// The longest document allowed (lengths above are clamped).
    pub max_tokens: u64,
    /// Seeds the lengths and tokens.
    pub seed: u64,
    /// The cache id its keys carry.
    pub cache_id: u64,
    /// Tokens are drawn below this (the vocabulary size).
    pub vocab: u32,
    /// Every document ends with this token, when set.
    pub eos: Option<u32>,
    /// Bytes per shard reported (for `dsrt plan`): tokens times this width.
    pub token_bytes: u64,
}

impl SyntheticSpec {
    /// `docs` documents in `shards` shards of mean `mean_tokens` tokens (u16 ids below
    /// 50,000, no EOS).
    pub fn new(docs: u64, shards: u64, mean_tokens: u64) -> Self {
        Self {
            docs,
            shards,
            mean_tokens,
            max_tokens: u64::MAX,
            seed: 0,
            cache_id: 0,
            vocab: 50_000,
            eos: None,
            token_bytes: 2,
        }
    }
}

/// Sources whose documents are computed from their specs.
#[derive(Debug, Clone)]
pub struct SyntheticSource {
    specs: Vec<SyntheticSpec>,
    /// Per source, the length at each step of the stride order through the quantiles.
    lengths: Vec<Vec<u64>>,
    /// Per source, prefix sums of `lengths` (one entry more).
    prefix: Vec<Vec<u64>>,
}

impl SyntheticSource {
    /// Sources of the given specs.
    pub fn new(specs: Vec<SyntheticSpec>) -> Self {
        let standard = lognormal_quantiles();
        let lengths: Vec<Vec<u64>> = specs
            .iter()
            .map(|spec| {
                (0..QUANTILES as u64)
                    .map(|step| {
                        let q = standard[((step * STRIDE) % QUANTILES as u64) as usize];
                        ((q * spec.mean_tokens as f64).round() as u64).clamp(1, spec.max_tokens)
                    })
                    .collect()
            })
            .collect();
        let prefix = lengths
            .iter()
            .map(|l| {
                let mut at = 0;
                std::iter::once(0)
                    .chain(l.iter().map(|&x| {
                        at += x;
                        at
                    }))
                    .collect()
            })
            .collect();
        Self {
            specs,
            lengths,
            prefix,
        }
    }

    /// Document `doc`'s shard and its offset there (shards as `CacheShape::equal_shards`
    /// lays them out: the first `docs % shards` one longer).
    fn place(&self, source: usize, doc: u64) -> (u64, u64) {
        let spec = &self.specs[source];
        let shards = spec.shards.clamp(1, spec.docs.max(1));
        let (per, extra) = (spec.docs / shards, spec.docs % shards);
        let long = extra * (per + 1);
        if doc < long {
            (doc / (per + 1), doc % (per + 1))
        } else {
            (extra + (doc - long) / per.max(1), (doc - long) % per.max(1))
        }
    }

    /// The first document of shard `shard`.
    fn shard_start(&self, source: usize, shard: u64) -> u64 {
        let spec = &self.specs[source];
        let shards = spec.shards.clamp(1, spec.docs.max(1));
        let (per, extra) = (spec.docs / shards, spec.docs % shards);
        if shard <= extra {
            shard * (per + 1)
        } else {
            extra * (per + 1) + (shard - extra) * per
        }
    }

    /// Where shard `shard`'s documents begin in the stride order.
    fn phase(&self, source: usize, shard: u64) -> u64 {
        mix(&[self.specs[source].seed ^ 0x6c65_6e67, shard]) % QUANTILES as u64
    }

    /// Tokens of `count` documents of the stride order from step `from` (cyclically).
    fn cyclic_sum(&self, source: usize, from: u64, count: u64) -> u64 {
        let q = QUANTILES as u64;
        let prefix = &self.prefix[source];
        let whole = count / q * prefix[QUANTILES];
        let (from, rest) = (from % q, count % q);
        let end = from + rest;
        whole
            + if end <= q {
                prefix[end as usize] - prefix[from as usize]
            } else {
                prefix[QUANTILES] - prefix[from as usize] + prefix[(end - q) as usize]
            }
    }

    /// The specs.
    pub fn specs(&self) -> &[SyntheticSpec] {
        &self.specs
    }

    /// Token `i` of document `doc` of `source` (the last is the EOS when the spec has one).
    pub fn token(&self, source: usize, doc: u64, i: u64) -> u32 {
        let spec = &self.specs[source];
        if let Some(eos) = spec.eos {
            if i + 1 == self.n_tokens(source, doc) {
                return eos;
            }
        }
        let hash = mix(&[spec.seed, doc, i]);
        let mut token = (hash % u64::from(spec.vocab.max(1))) as u32;
        if Some(token) == spec.eos {
            token = token.wrapping_add(1) % spec.vocab.max(1);
        }
        token
    }
}

/// Quantiles of a log-normal of shape 1 scaled to mean 1, at the midpoints of `QUANTILES`
/// equal-probability bins.
fn lognormal_quantiles() -> Vec<f64> {
    let raw: Vec<f64> = (0..QUANTILES)
        .map(|j| (normal_quantile((j as f64 + 0.5) / QUANTILES as f64)).exp())
        .collect();
    let mean = raw.iter().sum::<f64>() / QUANTILES as f64;
    raw.into_iter().map(|q| q / mean).collect()
}

/// The standard normal's quantile function (Acklam's rational approximation, relative error
/// below 1.2e-9: far finer than a token).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.024_25 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.024_25 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

impl DocumentSource for SyntheticSource {
    type Buf = Vec<u8>;

    fn sources(&self) -> usize {
        self.specs.len()
    }

    fn name(&self, source: usize) -> String {
        format!("synthetic source {source}")
    }

    fn shape(&self, source: usize) -> CacheShape {
        let spec = &self.specs[source];
        CacheShape::equal_shards(spec.docs, spec.shards).with_cache_id(spec.cache_id)
    }

    #[inline]
    fn n_tokens(&self, source: usize, doc: u64) -> u64 {
        let (shard, offset) = self.place(source, doc);
        let step = (self.phase(source, shard) + offset) % QUANTILES as u64;
        self.lengths[source][step as usize]
    }

    fn tokens_in(&self, source: usize, docs: Range<u64>) -> u64 {
        let mut tokens = 0;
        let mut at = docs.start;
        while at < docs.end {
            let (shard, offset) = self.place(source, at);
            let in_shard = (self.shard_start(source, shard + 1) - at).min(docs.end - at);
            tokens += self.cyclic_sum(source, self.phase(source, shard) + offset, in_shard);
            at += in_shard;
        }
        tokens
    }

    fn coverage(&self, source: usize, end: End, token: u32) -> Result<Coverage, TokenStreamError> {
        let spec = &self.specs[source];
        if end == End::End && spec.eos == Some(token) {
            return Ok(Coverage::All);
        }
        // Drawn tokens lie below the vocabulary size: an id outside it (other than the EOS)
        // is carried by no document. Within it, whether one begins or ends with it is
        // chance, which the source does not count.
        Ok(if token >= spec.vocab && spec.eos != Some(token) {
            Coverage::None
        } else {
            Coverage::Unknown
        })
    }

    fn key(&self, source: usize, doc: u64) -> (u64, u64) {
        (self.specs[source].cache_id, doc)
    }

    fn shard_bytes(&self, source: usize, shard: u64) -> u64 {
        let spec = &self.specs[source];
        let end = self.shard_start(source, shard + 1).min(spec.docs);
        let start = self.shard_start(source, shard).min(end);
        self.tokens_in(source, start..end) * spec.token_bytes
    }

    fn read<'a>(
        &'a self,
        source: usize,
        doc: u64,
        buf: &'a mut Vec<u8>,
    ) -> Result<StoredTokens<'a>, TokenStreamError> {
        let n = self.n_tokens(source, doc);
        buf.clear();
        for i in 0..n {
            buf.extend_from_slice(&self.token(source, doc, i).to_le_bytes());
        }
        Ok(StoredTokens::U32(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_sums_equal_the_documents_lengths() {
        let source = SyntheticSource::new(vec![SyntheticSpec::new(50_003, 7, 300)]);
        let lengths: Vec<u64> = (0..50_003).map(|d| source.n_tokens(0, d)).collect();
        for (a, b) in [
            (0, 50_003),
            (5, 7_150),
            (7_142, 7_143),
            (100, 100),
            (20_000, 50_003),
        ] {
            assert_eq!(
                source.tokens_in(0, a..b),
                lengths[a as usize..b as usize].iter().sum::<u64>(),
                "{a}..{b}"
            );
        }
    }

    #[test]
    fn lengths_have_the_asked_mean_and_a_long_tail() {
        let source = SyntheticSource::new(vec![SyntheticSpec::new(200_000, 10, 2000)]);
        let lengths: Vec<u64> = (0..200_000).map(|d| source.n_tokens(0, d)).collect();
        let mean = lengths.iter().sum::<u64>() as f64 / lengths.len() as f64;
        assert!((mean - 2000.0).abs() < 40.0, "mean {mean}");
        let max = *lengths.iter().max().unwrap_or(&0);
        assert!(max > 20_000, "longest {max}");
        assert!(lengths.iter().all(|&l| l >= 1));
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
    }
}
