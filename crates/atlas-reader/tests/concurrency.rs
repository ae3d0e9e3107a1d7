//! Sharing: one `Atlas` behind an `Arc`, read by 16 tasks on a 4-thread runtime and by 4 OS
//! threads each driving its own runtime, all at once and in different orders. Every array,
//! statistic and attribute read concurrently equals what an independent sequential reader
//! sees. (`open_budget.rs` shows racing readers open a segment once.)
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small known values

mod common;

use atlas_reader::{Atlas, AtlasError, CollectionStats, DatasetView};
use common::{every_dtype, prefix, stations, write};
use std::sync::Arc;

/// What a service shares between request handlers.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Atlas>();
    shared::<AtlasError>();
    shared::<CollectionStats>();
    shared::<DatasetView<'static>>();
};

const STATIONS: usize = 300;

/// Everything a reader sees of dataset `ordinal`, as text.
async fn observe(atlas: &Atlas, ordinal: u32) -> String {
    let view = atlas.dataset_at(ordinal).unwrap();
    let mut out = format!("{} {:?}\n", view.name(), view.attributes().await.unwrap());
    if view.name().starts_with("station") {
        let temp = view
            .read_array::<f32>("temp", vec![], vec![])
            .await
            .unwrap();
        out += &format!("{temp:?} {:?}\n", view.array_stats("temp").await.unwrap());
    } else {
        let f32s = view.read_array::<f32>("f32", vec![], vec![]).await.unwrap();
        let text = view
            .read_array::<String>("text", vec![], vec![])
            .await
            .unwrap();
        out += &format!(
            "{f32s:?} {text:?} {:?}\n",
            view.array_stats("f32").await.unwrap()
        );
        out += &format!("{:?}\n", view.array_attributes("f32").await.unwrap());
    }
    out
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Reads every dataset once, starting at `start` and walking with (about) `stride`.
async fn walk(atlas: &Atlas, start: u32, stride: u32) -> Vec<(u32, String)> {
    let n = atlas.dataset_count() as u32;
    let stride = (stride..).find(|s| gcd(*s, n) == 1).unwrap();
    let mut out = Vec::new();
    for step in 0..n {
        let ordinal = (start + step * stride) % n;
        out.push((ordinal, observe(atlas, ordinal).await));
    }
    out.sort();
    out
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn tasks_and_threads_share_one_atlas() {
    let rt = runtime(4);
    let atlas = rt.block_on(async {
        let datasets =
            stations(STATIONS).chain((0..4).map(|i| every_dtype(&format!("all_{i}"), i)));
        let store = write(datasets).await;
        Arc::new(Atlas::open(store, &prefix()).await.unwrap())
    });
    // The reference: a second, independent reader, read sequentially.
    let reference = rt.block_on(async {
        let fresh = Atlas::open(write_again().await, &prefix()).await.unwrap();
        walk(&fresh, 0, 1).await
    });
    let stats_reference = rt.block_on(atlas.array_stats("temp")).unwrap();

    std::thread::scope(|scope| {
        // 4 OS threads, each with its own runtime, sharing the same Atlas.
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let atlas = Arc::clone(&atlas);
                scope.spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap()
                        .block_on(walk(&atlas, t * 37, [1, 3, 7, 11][t as usize]))
                })
            })
            .collect();
        // 16 tasks on the shared 4-thread runtime.
        let tasks: Vec<_> = (0..16u32)
            .map(|t| {
                let atlas = Arc::clone(&atlas);
                rt.spawn(async move {
                    let strides = [1, 3, 7, 9, 11, 13, 17, 19];
                    let walked = walk(&atlas, t * 19, strides[t as usize % 8]).await;
                    let stats = atlas.array_stats("temp").await.unwrap();
                    (walked, stats)
                })
            })
            .collect();
        for task in tasks {
            let (walked, stats) = rt.block_on(task).unwrap();
            assert!(walked == reference, "a task read something else");
            assert_eq!(stats, stats_reference);
        }
        for thread in threads {
            assert!(
                thread.join().unwrap() == reference,
                "a thread read something else"
            );
        }
    });
}

/// The same collection written again to a fresh store (the writer is deterministic).
async fn write_again() -> Arc<dyn object_store::ObjectStore> {
    write(stations(STATIONS).chain((0..4).map(|i| every_dtype(&format!("all_{i}"), i)))).await
}
