//! The S3 server the suite runs against must make conditional PUTs atomic, or the tests that
//! rely on them (lossless deletes, manifest migration) could pass by luck: 8 concurrent
//! `If-None-Match: *` PUTs of one new key give exactly one success, and 8 concurrent `If-Match`
//! updates from the same e-tag give exactly one; ten rounds each. `cargo xtask test` runs this
//! first and refuses to run the other S3 tests when it fails. `#[ignore]`d: it needs the server.
//!
//! A racer whose request fails in transport (a timeout, a reset connection) proves nothing
//! either way, since its PUT may or may not have been applied: that round is run again on a
//! fresh key, at most `ATTEMPTS` times, and only a wrong count of winners fails the check.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used)] // Test code.
#![allow(clippy::print_stderr)] // A retried round is said in the test's output.

mod common;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, Error, ObjectStore, ObjectStoreExt, PutMode, PutOptions,
    RetryConfig, UpdateVersion,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const RACERS: usize = 8;
const ROUNDS: usize = 10;
const ATTEMPTS: usize = 3;

fn store() -> Arc<dyn ObjectStore> {
    let bucket = common::bucket("conditional_puts_are_atomic_under_races");
    Arc::new(
        AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(true)
                    // SeaweedFS makes a loser wait for the key's lock in steps of a second, so
                    // among 8 racers on a busy machine one answer can take many seconds.
                    .with_timeout(Duration::from_secs(90)),
            )
            // A loser may be told to retry (503) before it is told it lost (412): retry at
            // once rather than after object_store's default backoff.
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(5),
                    max_backoff: Duration::from_millis(100),
                    base: 2.0,
                },
                max_retries: 20,
                retry_timeout: Duration::from_secs(90),
            })
            .build()
            .unwrap(),
    )
}

fn key(round: usize, what: &str) -> Path {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    Path::from(format!(
        "s3-server-check/{what}-{}-{nanos}-{round}",
        std::process::id()
    ))
}

/// Runs `RACERS` PUTs of `key` with `mode` at once; returns how many succeeded, or `Err` with the
/// first failure that was neither a precondition failure nor (for creates) "already exists".
async fn race(store: &Arc<dyn ObjectStore>, key: &Path, mode: &PutMode) -> Result<usize, Error> {
    // Every racer waits for the same instant, then sends.
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let tasks: Vec<_> = (0..RACERS)
        .map(|racer| {
            let (store, key, mode) = (Arc::clone(store), key.clone(), mode.clone());
            tokio::spawn(async move {
                tokio::time::sleep_until(start).await;
                let body = format!("racer {racer}").into_bytes();
                store
                    .put_opts(
                        &key,
                        body.into(),
                        PutOptions {
                            mode,
                            ..PutOptions::default()
                        },
                    )
                    .await
            })
        })
        .collect();
    let mut won = 0;
    let mut inconclusive = None;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::AlreadyExists { .. } | Error::Precondition { .. }) => {}
            Err(other) => inconclusive = inconclusive.or(Some(other)),
        }
    }
    inconclusive.map_or(Ok(won), Err)
}

/// Runs one round (`race` on a fresh key made ready by `prepare`) until every racer got an
/// answer, at most `ATTEMPTS` times; returns the winners of the first conclusive attempt.
async fn conclusive_race(
    store: &Arc<dyn ObjectStore>,
    round: usize,
    what: &str,
    prepare: impl AsyncFn(&Path) -> PutMode,
) -> usize {
    for attempt in 1..=ATTEMPTS {
        let key = key(round, what);
        let mode = prepare(&key).await;
        match race(store, &key, &mode).await {
            Ok(won) => return won,
            Err(error) => eprintln!(
                "round {round} ({what}), attempt {attempt} of {ATTEMPTS}: a racer got no \
                 answer ({error}); the round is run again on a fresh key"
            ),
        }
    }
    panic!("round {round} ({what}): no attempt of {ATTEMPTS} got an answer from every racer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the S3 test server; cargo xtask test runs it before the other S3 tests"]
async fn conditional_puts_are_atomic_under_races() {
    let store = store();
    // The first write to a fresh server may wait for its storage to be allotted: do it alone.
    let warm_up = key(0, "warm-up");
    store.put(&warm_up, b"warm".to_vec().into()).await.unwrap();
    for round in 0..ROUNDS {
        let won = conclusive_race(&store, round, "create", async |_| PutMode::Create).await;
        assert_eq!(
            won, 1,
            "round {round}: {won} of {RACERS} If-None-Match PUTs succeeded"
        );

        let won = conclusive_race(&store, round, "update", async |updated| {
            let first = store.put(updated, b"v0".to_vec().into()).await.unwrap();
            PutMode::Update(UpdateVersion {
                e_tag: first.e_tag.clone(),
                version: first.version.clone(),
            })
        })
        .await;
        assert_eq!(
            won, 1,
            "round {round}: {won} of {RACERS} If-Match PUTs from one e-tag succeeded"
        );
    }
}
