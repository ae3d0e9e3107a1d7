//! The S3 server the suite runs against must make conditional PUTs atomic, or the tests that
//! rely on them (lossless deletes, manifest migration) could pass by luck: 8 concurrent
//! `If-None-Match: *` PUTs of one new key give exactly one success, and 8 concurrent `If-Match`
//! updates from the same e-tag give exactly one; ten rounds each. `cargo xtask test` runs this
//! first and refuses to run the other S3 tests when it fails. `#[ignore]`d: it needs the server.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used)] // Test code.

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

fn store() -> Arc<dyn ObjectStore> {
    let bucket = common::bucket("conditional_puts_are_atomic_under_races");
    Arc::new(
        AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(true)
                    .with_timeout(Duration::from_secs(30)),
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
                retry_timeout: Duration::from_secs(30),
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

/// Runs `RACERS` PUTs of `key` with `mode` at once; returns how many succeeded, after checking
/// every failure is a precondition failure (or, for creates, "already exists").
async fn race(store: &Arc<dyn ObjectStore>, key: &Path, mode: &PutMode) -> usize {
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
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::AlreadyExists { .. } | Error::Precondition { .. }) => {}
            Err(other) => panic!("a racing conditional PUT failed otherwise: {other}"),
        }
    }
    won
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the S3 test server; cargo xtask test runs it before the other S3 tests"]
async fn conditional_puts_are_atomic_under_races() {
    let store = store();
    for round in 0..ROUNDS {
        let created = key(round, "create");
        let won = race(&store, &created, &PutMode::Create).await;
        assert_eq!(
            won, 1,
            "round {round}: {won} of {RACERS} If-None-Match PUTs succeeded"
        );

        let updated = key(round, "update");
        let first = store.put(&updated, b"v0".to_vec().into()).await.unwrap();
        let version = UpdateVersion {
            e_tag: first.e_tag.clone(),
            version: first.version.clone(),
        };
        let won = race(&store, &updated, &PutMode::Update(version)).await;
        assert_eq!(
            won, 1,
            "round {round}: {won} of {RACERS} If-Match PUTs from one e-tag succeeded"
        );
    }
}
