//! A token loader's stats: a consumer that works 20 ms per batch on a loader that keeps up
//! waits for almost nothing; a loader held up by slow reads leaves the consumer waiting most
//! of the time and names reading as where its time went; the counts add up to the batches
//! received, and the sources' token shares follow the weights.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small values.

use dsrt_plan::{CacheShape, RemainderPolicy};
use dsrt_token_stream::{
    Coverage, DocumentSource, End, LoaderOptions, RunConfig, StoredTokens, SyntheticSource,
    SyntheticSpec, TokenConfig, TokenLoader, TokenPlan, TokenStreamError,
};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

const SEQ_LEN: u64 = 64;
const BATCH: usize = 4;

fn synthetic() -> SyntheticSource {
    SyntheticSource::new(
        (0..2u64)
            .map(|c| SyntheticSpec {
                seed: c + 1,
                cache_id: 10 + c,
                ..SyntheticSpec::new(2_000, 8, 40)
            })
            .collect(),
    )
}

fn loader<S: DocumentSource + 'static>(source: S, workers: usize) -> TokenLoader<S> {
    let config = TokenConfig {
        seq_len: SEQ_LEN,
        weights: Some(vec![3.0, 1.0]),
        tokens_per_epoch: Some(40 * BATCH as u64 * SEQ_LEN),
        ..TokenConfig::default()
    };
    let run = RunConfig {
        rank: 0,
        world_size: 1,
        ranks_per_node: 1,
        policy: RemainderPolicy::Pad,
        ..RunConfig::default()
    };
    let plan = Arc::new(TokenPlan::new(&source, &config, &run).unwrap());
    let options = LoaderOptions {
        batch_size: BATCH,
        workers,
        prefetch: 2,
        expand: true,
        first_batch: 0,
    };
    TokenLoader::new(plan, Arc::new(source), options)
}

#[test]
fn a_consumer_working_20_ms_per_batch_waits_for_almost_nothing() {
    let mut loader = loader(synthetic(), 2);
    let (mut batches, mut rows) = (0u64, 0u64);
    for batch in loader.by_ref().take(30) {
        let batch = batch.unwrap();
        batches += 1;
        rows += batch.rows() as u64;
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = loader.stats();
    assert_eq!(stats.batches, batches);
    assert_eq!(stats.samples, rows);
    assert_eq!(stats.tokens, rows * SEQ_LEN);
    assert!(stats.time_to_first_batch.unwrap() < stats.elapsed);
    assert!(
        stats.stall_share() < 0.05,
        "stall share {} ({stats:?})",
        stats.stall_share()
    );
    // 29 batches after the first, 20 ms each.
    assert!(stats.wall >= Duration::from_millis(29 * 20), "{stats:?}");
    // Every token read belongs to a source, in about the weights' shares (3:1).
    let shares = stats.source_shares();
    assert!((shares[0] - 0.75).abs() < 0.1, "{shares:?}");
    assert!(stats.per_source.iter().sum::<u64>() >= rows * (SEQ_LEN - 1));
}

/// A source whose every document read takes 2 ms: a loader that cannot keep up.
struct Slow(SyntheticSource);

impl DocumentSource for Slow {
    type Buf = <SyntheticSource as DocumentSource>::Buf;

    fn sources(&self) -> usize {
        self.0.sources()
    }

    fn name(&self, source: usize) -> String {
        self.0.name(source)
    }

    fn shape(&self, source: usize) -> CacheShape {
        self.0.shape(source)
    }

    fn n_tokens(&self, source: usize, doc: u64) -> u64 {
        self.0.n_tokens(source, doc)
    }

    fn tokens_in(&self, source: usize, docs: Range<u64>) -> u64 {
        self.0.tokens_in(source, docs)
    }

    fn coverage(&self, source: usize, end: End, token: u32) -> Result<Coverage, TokenStreamError> {
        self.0.coverage(source, end, token)
    }

    fn key(&self, source: usize, doc: u64) -> (u64, u64) {
        self.0.key(source, doc)
    }

    fn read<'a>(
        &'a self,
        source: usize,
        doc: u64,
        buf: &'a mut Self::Buf,
    ) -> Result<StoredTokens<'a>, TokenStreamError> {
        std::thread::sleep(Duration::from_millis(2));
        self.0.read(source, doc, buf)
    }
}

#[test]
fn a_loader_held_up_by_slow_reads_leaves_the_consumer_waiting_and_names_reading() {
    let mut loader = loader(Slow(synthetic()), 1);
    for batch in loader.by_ref().take(15) {
        batch.unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats = loader.stats();
    assert_eq!(stats.batches, 15);
    assert!(
        stats.stall_share() > 0.8,
        "stall share {} ({stats:?})",
        stats.stall_share()
    );
    assert_eq!(stats.stages()[0].0, "read", "{stats:?}");
}
