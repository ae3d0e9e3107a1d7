//! `dsrt pack --out s3://...`, `dsrt migrate s3://...` and the reading subcommands on
//! `s3://` URLs through the binary, configured only by
//! the standard `AWS_*` environment variables, against the local S3-compatible server
//! `.ci/s3-server.sh` starts. Every test is `#[ignore]`d; `cargo xtask test` starts the server
//! and runs them with `--ignored`. Only loopback endpoints are accepted.
#![allow(clippy::unwrap_used)] // Test code.

mod common;

use common::{dir_with, dsrt_in, make_v2};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh prefix URL for `test`; without a configured server the test fails and says why.
fn prefix_url(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. Run \
             `cargo xtask test`, or `bash .ci/s3-server.sh start DIR` and `source DIR/env` first."
        );
    };
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        ["http://127.0.0.1:", "http://localhost:"]
            .iter()
            .any(|p| endpoint.starts_with(p)),
        "AWS_ENDPOINT_URL ('{endpoint}') is not on loopback"
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "s3://{bucket}/dsrt-cli-tests/{test}-{}-{nanos}",
        std::process::id()
    )
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn pack_out_s3_publishes_and_a_second_pack_is_refused() {
    let url = prefix_url("pack");
    let input = dir_with(&[("a.txt", b"alpha"), ("b/c.txt", b"gamma")]);
    let args = [
        "pack",
        "--from-dir",
        ".",
        "--out",
        &url,
        "--source",
        "s3",
        "--json",
    ];
    let run = dsrt_in(input.path(), &args).ok();
    let json = run.json();
    assert_eq!(json["path"], url.as_str());
    assert_eq!(json["samples"], 2);
    assert!(run.stderr.contains("publishing"), "{}", run.stderr);
    let again = dsrt_in(input.path(), &args).fails(1);
    assert!(
        again.stderr.contains("already published"),
        "{}",
        again.stderr
    );
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn migrate_accepts_s3_urls() {
    let url = prefix_url("migrate");
    let input = dir_with(&[("a.txt", b"alpha")]);
    let args = ["pack", "--from-dir", ".", "--out", &url, "--source", "m"];
    dsrt_in(input.path(), &args).ok();
    // A v3 cache stays as it is; the conditional path itself is covered in dsrt-remote.
    let run = dsrt_in(input.path(), &["migrate", "--to", "3", &url, "--json"]).ok();
    let json = run.json();
    assert_eq!(json["entries"][0]["outcome"], "unchanged");
    assert_eq!(json["entries"][0]["atomic"], true);
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn migrate_takes_s3_urls_and_directories_in_one_list() {
    let url = prefix_url("migrate-mixed");
    let input = dir_with(&[("a.txt", b"alpha")]);
    let args = ["pack", "--from-dir", ".", "--out", &url, "--source", "m"];
    dsrt_in(input.path(), &args).ok();
    let args = ["pack", "--from-dir", ".", "--out", "local", "--source", "l"];
    dsrt_in(input.path(), &args).ok();
    // The local cache as an older writer left it: v2, its id its position in the list.
    make_v2(&input.path().join("local"));
    let run = dsrt_in(input.path(), &["migrate", "--to", "3", &url, "local"]).ok();
    let text = run.stdout_text();
    assert!(
        text.starts_with(&format!("{url}: unchanged (cache_id ")),
        "{text}"
    );
    assert!(text.ends_with("local: updated (cache_id 1)\n"), "{text}");
}

/// Input of several shards, packed to `url` and to the local directory `local`.
fn pack_both(url: &str) -> tempfile::TempDir {
    let files: Vec<(String, Vec<u8>)> = (0..10)
        .map(|i| {
            (
                format!("in/{i:02}.txt"),
                format!("object {i} ").repeat(60).into_bytes(),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let dir = dir_with(&borrowed);
    for out in [url, "local"] {
        let args = [
            "pack",
            "--from-dir",
            "in",
            "--out",
            out,
            "--source",
            "s3-read",
            "--max-shard-bytes",
            "1KiB",
        ];
        dsrt_in(dir.path(), &args).ok();
    }
    dir
}

/// `args` followed by `--cache-dir DIR`.
fn with_cache_dir<'a>(args: &[&'a str], cache_dir: &'a Path) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(["--cache-dir", cache_dir.to_str().unwrap()]);
    all
}

/// Shard files (`shards/*.bin`) under `dir`, recursively.
fn shard_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                shard_files(&path)
            } else {
                let in_shards = path.parent().and_then(Path::file_name) == Some("shards".as_ref());
                // Not the shard cache's own files (seals, partial downloads).
                let own = e.file_name().to_string_lossy().starts_with(".shard-cache");
                usize::from(in_shards && !own && path.extension().is_some_and(|x| x == "bin"))
            }
        })
        .sum()
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn inspect_cat_verify_and_iterate_read_s3_urls_as_local_caches() {
    let url = prefix_url("read");
    let dir = pack_both(&url);
    let cache_dir = dir.path().join("local-cache");
    let run = |args: &[&str]| dsrt_in(dir.path(), &with_cache_dir(args, &cache_dir)).ok();

    let mut remote = run(&["inspect", &url, "--json"]).json();
    let mut local = run(&["inspect", "local", "--json"]).json();
    assert_eq!(remote["path"], url.as_str());
    let shards = local["shards"].as_array().unwrap().len();
    assert!(shards > 1, "{local}");
    remote.as_object_mut().unwrap().remove("path");
    local.as_object_mut().unwrap().remove("path");
    assert_eq!(remote, local);
    // inspect fetches no shard.
    assert_eq!(shard_files(&cache_dir), 0);

    let expected = run(&["cat", "local", "3"]).stdout;
    assert_eq!(run(&["cat", &url, "3"]).stdout, expected);
    assert_eq!(
        run(&["cat", &url, "3", "--fetch", "range"]).stdout,
        expected
    );

    let verified = run(&["verify", "--full", &url]);
    assert_eq!(verified.stdout_text(), format!("{url}: ok\n"));
    assert_eq!(shard_files(&cache_dir), shards);

    let keys = ["--keys", "--seed", "9", "--world-size", "2", "--rank", "1"];
    let local_keys = run(&[&["iterate", "local"][..], &keys].concat()).stdout_text();
    let remote_keys = run(&[&["iterate", url.as_str()][..], &keys].concat()).stdout_text();
    assert_eq!(local_keys.lines().count(), 5);
    assert_eq!(remote_keys, local_keys);
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn iterate_mixes_s3_urls_and_directories_and_fills_the_cache_dir() {
    let url = prefix_url("iterate");
    let dir = pack_both(&url);
    let other = dir_with(&[("x.txt", b"extra")]);
    dsrt_in(
        other.path(),
        &["pack", "--from-dir", ".", "--out", "x", "--source", "x"],
    )
    .ok();
    let x = other.path().join("x");
    let cache_dir = dir.path().join("local-cache");
    let args = ["iterate", url.as_str(), x.to_str().unwrap(), "--keys"];
    let run = dsrt_in(dir.path(), &with_cache_dir(&args, &cache_dir)).ok();
    assert_eq!(run.stdout_text().lines().count(), 11);
    let info = dsrt_in(dir.path(), &["inspect", "local", "--json"])
        .ok()
        .json();
    let shards = info["shards"].as_array().unwrap().len();
    assert_eq!(shard_files(&cache_dir), shards);
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_missing_s3_cache_fails_naming_its_url_and_a_small_limit_is_refused() {
    let url = prefix_url("missing");
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("local-cache");
    let run = dsrt_in(dir.path(), &with_cache_dir(&["inspect", &url], &cache_dir)).fails(1);
    assert!(
        run.stderr.contains(&format!("{url}/manifest.json")),
        "{}",
        run.stderr
    );
    let verify = dsrt_in(dir.path(), &with_cache_dir(&["verify", &url], &cache_dir)).fails(1);
    assert!(verify.stderr.contains(&url), "{}", verify.stderr);

    let packed = pack_both(&prefix_url("limit"));
    let url = prefix_url("limit2");
    dsrt_in(
        packed.path(),
        &["pack", "--from-dir", "in", "--out", &url, "--source", "l"],
    )
    .ok();
    let args = ["cat", url.as_str(), "0", "--cache-limit", "100"];
    let run = dsrt_in(packed.path(), &with_cache_dir(&args, &cache_dir)).fails(1);
    assert!(run.stderr.contains("cache limit"), "{}", run.stderr);
}

/// Publishes a 64-shard cache of 50 samples each at a fresh prefix; returns the scratch
/// directory, the URL and the local copy's layout.
fn job_cache(test: &str) -> (tempfile::TempDir, String, common::cluster::JobCache) {
    let root = tempfile::tempdir().unwrap();
    let cache = common::cluster::write_equal_shards(&root.path().join("local"), 64, 50);
    let url = prefix_url(test);
    let dsrt_remote::StoreLocation::Remote(prefix) =
        dsrt_remote::StoreLocation::parse(&url).unwrap()
    else {
        panic!("{url} is not a store URL");
    };
    dsrt_remote::publish_cache(
        &cache.path,
        &prefix,
        &dsrt_remote::PublishOptions::default(),
    )
    .unwrap();
    (root, url, cache)
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn four_nodes_of_two_ranks_download_each_shard_once_between_them() {
    use common::cluster::{assert_covers, node_dir, run_job, shard_files, Job};
    let (root, url, cache) = job_cache("nodes");
    let job = Job {
        nodes: 4,
        ranks_per_node: 2,
    };
    let runs = run_job(root.path(), "epoch", &url, job, true, &[]);
    assert_covers(&runs, 3200);
    let mut holders: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut downloaded = 0;
    for node in 0..job.nodes {
        for (name, bytes) in shard_files(&node_dir(root.path(), "epoch", node)) {
            *holders.entry(name).or_default() += 1;
            downloaded += bytes;
        }
    }
    assert_eq!(holders.len(), 64, "every shard downloaded");
    assert!(
        holders.values().all(|&n| n == 1),
        "each shard file is in exactly one node's directory: {holders:?}"
    );
    let egress = downloaded as f64 / cache.shard_bytes as f64;
    eprintln!("egress over 4 nodes: {egress:.4}x the cache's shard bytes");
    assert!(egress <= 1.05, "{egress}");
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_job_on_s3_stopped_at_40_percent_resumes_on_any_topology_with_exactly_the_rest() {
    let (root, url, cache) = job_cache("resume");
    common::cluster::stop_and_resume_on_other_topologies(root.path(), &url, &cache, true);
}

/// Every file under `dir` with its bytes: what "nothing was touched" compares.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    dsrt_atlas_test_runner::files_below(dir)
}

/// The shard cache's key directory of the one remote cache in `cache_dir`.
fn key_dir(cache_dir: &Path) -> std::path::PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir(cache_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_cache_dir_of_documents_is_refused_and_nothing_in_it_is_touched() {
    let url = prefix_url("documents");
    let dir = pack_both(&url);
    let documents = dir_with(&[
        ("thesis.tex", &[b'x'; 3 << 20][..]),
        ("draft.partial", b"half written"),
        (".shard-cache-tmp.notes", b"mine"),
        ("figures/plot.png", &[7; 2 << 20][..]),
    ]);
    let before = snapshot(documents.path());
    for args in [
        &["inspect", url.as_str()][..],
        &["cat", url.as_str(), "3"],
        &["iterate", url.as_str()],
    ] {
        let mut all = args.to_vec();
        let path = documents.path().to_str().unwrap();
        all.extend(["--cache-dir", path, "--cache-limit", "2MiB"]);
        let run = dsrt_in(dir.path(), &all).fails(1);
        assert!(
            run.stderr.contains("not empty") && run.stderr.contains(".shard-cache-root"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(
        snapshot(documents.path()),
        before,
        "every document is as it was"
    );
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn what_the_shard_cache_did_not_write_is_never_served_and_verify_full_checks_the_copies() {
    let url = prefix_url("trust");
    let dir = pack_both(&url);
    let cache_dir = dir.path().join("local-cache");
    let run = |args: &[&str]| dsrt_in(dir.path(), &with_cache_dir(args, &cache_dir));
    let expected = run(&["cat", "local", "0"]).ok().stdout;
    // `cat` downloads the sample's shard whole and keeps it, as its help says.
    assert_eq!(run(&["cat", &url, "0"]).ok().stdout, expected);
    assert_eq!(shard_files(&cache_dir), 1);
    let key = key_dir(&cache_dir);
    let kept = key.join("shards/000000.bin");
    assert!(kept.is_file());

    // A damaged copy (a bad disk): `verify --full` of the URL hashes what it would serve,
    // reports it, and removes it; the next run downloads it anew and is clean.
    let mut bytes = std::fs::read(&kept).unwrap();
    bytes[40] ^= 0xFF;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&kept)
        .and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &bytes, 0))
        .unwrap();
    let damaged = run(&["verify", "--full", &url]).fails(1);
    assert!(
        damaged.stderr.contains("damaged") && damaged.stderr.contains("000000.bin"),
        "{}",
        damaged.stderr
    );
    assert!(!kept.exists());
    let clean = run(&["verify", "--full", &url]).ok();
    assert_eq!(clean.stdout_text(), format!("{url}: ok\n"));
    assert_eq!(run(&["cat", &url, "0"]).ok().stdout, expected);

    // A file of the right length put in a shard's place (by hand, by another program) in a
    // shard cache that has not downloaded the shard is never served, replaced or removed:
    // the read fails naming it.
    let cache_dir = dir.path().join("other-cache");
    let run = |args: &[&str]| dsrt_in(dir.path(), &with_cache_dir(args, &cache_dir));
    run(&["inspect", &url]).ok();
    let key = key_dir(&cache_dir);
    let shard = key.join("shards/000001.bin");
    let len = std::fs::metadata(dir.path().join("local/shards/000001.bin"))
        .unwrap()
        .len();
    std::fs::create_dir_all(shard.parent().unwrap()).unwrap();
    assert!(!shard.exists());
    std::fs::write(&shard, vec![b'!'; usize::try_from(len).unwrap()]).unwrap();
    let refused = run(&["verify", "--full", &url]).fails(1);
    assert!(
        refused.stderr.contains("000001.bin") && refused.stderr.contains("did not write"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        std::fs::read(&shard).unwrap(),
        vec![b'!'; usize::try_from(len).unwrap()]
    );
    // Removed by its owner, the name is the cache's again.
    std::fs::remove_file(&shard).unwrap();
    assert_eq!(
        run(&["verify", "--full", &url]).ok().stdout_text(),
        format!("{url}: ok\n")
    );
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_remote_index_of_the_wrong_size_is_refused_before_it_is_downloaded() {
    use dsrt_remote::object_store::ObjectStoreExt;
    let url = prefix_url("index-size");
    let dir = pack_both(&url);
    let dsrt_remote::StoreLocation::Remote(prefix) =
        dsrt_remote::StoreLocation::parse(&url).unwrap()
    else {
        panic!("{url} is not a store URL");
    };
    // 20 MB where the manifest's 10 samples imply 240 bytes.
    let store = prefix.store();
    let object = prefix.object("index.bin");
    object_access::block_on(store.put(&object, vec![0u8; 20 << 20].into()))
        .unwrap()
        .unwrap();
    let cache_dir = dir.path().join("local-cache");
    let run = dsrt_in(dir.path(), &with_cache_dir(&["inspect", &url], &cache_dir)).fails(1);
    assert!(
        run.stderr.contains("index.bin") && run.stderr.contains("implies 240"),
        "{}",
        run.stderr
    );
    // Nothing of it was kept (nor downloaded into a partial file).
    let held: u64 = dsrt_atlas_test_runner::files_below(&cache_dir)
        .iter()
        .map(|(_, b)| b.len() as u64)
        .sum();
    assert!(held < 1 << 20, "{held} bytes in the shard cache");
}
