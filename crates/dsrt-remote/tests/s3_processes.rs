//! Four processes iterating one remote dataset (two caches, about twenty shards on the local
//! S3-compatible server) through one local cache directory, one of them SIGKILLed while a
//! download of its is in flight; three rounds, each with a fresh local directory.
//!
//! Each child reaches the server through its own in-test HTTP proxy (`s3_support::Proxy`), so
//! the parent knows which process made which shard GET and whether its response was forwarded
//! whole. The victim's proxy is throttled (about 20 KB/s), so its downloads are slow and it is
//! killed mid-transfer, with `round` of its downloads completed first.
//!
//! Checked per round, which is what "every shard downloaded at most once per run by the
//! survivors, every sample byte-exact, no partial file afterwards" means here:
//! - every survivor read every sample of the dataset once, each byte-equal to the same sample
//!   of the local copies the caches were published from (checked in the child, by key);
//! - the survivors made at most one GET per shard between them, and every one of them
//!   completed: the GETs counted are those of the survivors' proxies; the victim's are not,
//!   as its download that was cut by the kill is exactly the one a survivor must repeat;
//! - the shard the victim was downloading when killed was downloaded whole by exactly one
//!   survivor (the take-over), and every shard was downloaded whole by someone;
//! - no `.partial` file is left in the local cache directory.
//!
//! The children are this test binary (`harness = false`) re-run with `DSRT_S3P_CHILD` set. Its
//! tests need the server and are ignored unless run with `--ignored`, as `cargo xtask test`
//! does (`dsrt_atlas_test_runner::run_ignored`).
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code.
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

mod s3_support;

use dsrt_atlas_test_runner as runner;
use dsrt_dataset::{Dataset, Loader, LoaderConfig};
use dsrt_plan::{PlanConfig, Shuffle};
use dsrt_reader::{OpenOptions, SampleBuf};
use dsrt_remote::{open_remote, RemoteOptions, StoreLocation};
use s3_support::{partials_under, publish, s3_prefix, through_proxy, upstream, Proxy, ShardGet};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "DSRT_S3P_CHILD";
const PROXY_ENV: &str = "DSRT_S3P_PROXY";
const URLS_ENV: &str = "DSRT_S3P_URLS";
const COPIES_ENV: &str = "DSRT_S3P_COPIES";
const CACHE_DIR_ENV: &str = "DSRT_S3P_CACHE_DIR";
const REPORT_ENV: &str = "DSRT_S3P_REPORT";
const SAMPLES_PER_CACHE: u64 = 100;
const SHARD_BYTES: u64 = 32 << 10;
const ROUNDS: usize = 3;

fn main() -> ExitCode {
    if std::env::var_os(CHILD_ENV).is_some() {
        child();
        return ExitCode::SUCCESS;
    }
    runner::run_ignored(
        &[(
            "four_processes_one_killed_download_each_shard_once_and_read_byte_exact",
            four_processes_one_killed_download_each_shard_once_and_read_byte_exact,
        )],
        "needs the S3 test server: cargo xtask test runs it",
    )
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap()
}

/// Child: one epoch of the remote dataset with two workers through the proxy, every sample
/// compared with the local copies by key; writes `ok <samples>` to its report file.
fn child() {
    let proxy = env(PROXY_ENV).parse().unwrap();
    let options = RemoteOptions::new(env(CACHE_DIR_ENV));
    let mut caches = Vec::new();
    for url in env(URLS_ENV).split(',') {
        let location = StoreLocation::parse(url).unwrap();
        let remote = through_proxy(
            location.as_remote().unwrap(),
            proxy,
            Duration::from_secs(120),
        );
        caches.push((PathBuf::from(url), open_remote(&remote, &options).unwrap()));
    }
    let dataset = Arc::new(Dataset::from_caches(caches).unwrap());
    let copies: Vec<String> = env(COPIES_ENV).split(',').map(str::to_owned).collect();
    let local = Dataset::open(&copies, OpenOptions::default()).unwrap();
    let config = LoaderConfig {
        plan: PlanConfig {
            seed: 3,
            shuffle: Shuffle::Local { window_shards: 2 },
            ..PlanConfig::default()
        },
        workers: 2,
        prefetch: 64,
        ..LoaderConfig::default()
    };
    let mut seen = HashSet::new();
    let mut buf = SampleBuf::new();
    for sample in Loader::new(Arc::clone(&dataset), config).unwrap() {
        let sample = sample.unwrap();
        let expected = local.read(sample.key, &mut buf).unwrap().payload;
        assert_eq!(sample.payload.as_ref(), expected, "sample {:?}", sample.key);
        assert!(seen.insert(sample.key), "{:?} twice", sample.key);
    }
    assert_eq!(seen.len() as u64, local.len());
    std::fs::write(env(REPORT_ENV), format!("ok {}", seen.len())).unwrap();
}

fn spawn(proxy: &Proxy, urls: &str, copies: &str, cache_dir: &Path, report: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, "1")
        .env(PROXY_ENV, proxy.addr().to_string())
        .env(URLS_ENV, urls)
        .env(COPIES_ENV, copies)
        .env(CACHE_DIR_ENV, cache_dir)
        .env(REPORT_ENV, report)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for `child` (polling, bounded so that a deadlock fails instead of hanging).
fn wait_success(mut child: Child, what: &str) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{what} failed: {status}");
            return;
        }
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish in 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls until `ready` holds for the victim's shard GETs, failing if the victim exits first.
fn wait_for(victim: &mut Child, proxy: &Proxy, what: &str, ready: impl Fn(&[ShardGet]) -> bool) {
    let start = Instant::now();
    while !ready(&proxy.shard_gets()) {
        if let Some(status) = victim.try_wait().unwrap() {
            panic!("the victim exited ({status}) before {what}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the victim never got to {what}: {:?}",
            proxy.shard_gets()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn in_flight(gets: &[ShardGet]) -> Option<&ShardGet> {
    gets.iter().find(|g| !g.completed && g.forwarded > 0)
}

fn four_processes_one_killed_download_each_shard_once_and_read_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = Vec::new();
    let mut copies = Vec::new();
    let mut shard_objects = Vec::new();
    for (name, seed) in [("procs-a", 11), ("procs-b", 12)] {
        let to = s3_prefix(name);
        let copy = publish(
            &dir.path().join("copies"),
            name,
            &to,
            SAMPLES_PER_CACHE,
            seed,
            SHARD_BYTES,
        );
        for shard in s3_support::shard_names(&copy) {
            shard_objects.push(format!("{}/shards/{shard}", to.prefix()));
        }
        urls.push(to.url().to_owned());
        copies.push(copy.display().to_string());
    }
    let (urls, copies) = (urls.join(","), copies.join(","));
    assert!(shard_objects.len() >= 16, "{} shards", shard_objects.len());
    let server = upstream();

    for round in 0..ROUNDS {
        let round_dir = dir.path().join(format!("round-{round}"));
        let cache_dir = round_dir.join("cache");
        std::fs::create_dir_all(&round_dir).unwrap();
        let proxies: Vec<Proxy> = (0..4).map(|_| Proxy::start(server)).collect();
        let reports: Vec<PathBuf> = (0..4)
            .map(|i| round_dir.join(format!("report-{i}")))
            .collect();
        // The victim (child 0) downloads slowly; it starts first, so it is downloading shards
        // the others will need when they start.
        proxies[0].set_throttle(Some((1024, Duration::from_millis(50))));
        let mut victim = spawn(&proxies[0], &urls, &copies, &cache_dir, &reports[0]);
        wait_for(&mut victim, &proxies[0], "its downloads", |gets| {
            gets.iter().filter(|g| g.completed).count() >= round && in_flight(gets).is_some()
        });
        let survivors: Vec<Child> = (1..4)
            .map(|i| spawn(&proxies[i], &urls, &copies, &cache_dir, &reports[i]))
            .collect();
        // Let the survivors reach the victim's files (not needed for the outcome: one arriving
        // later finds the partial file stale and claims it), then kill the victim while one
        // of its downloads is in flight.
        std::thread::sleep(Duration::from_millis(300));
        wait_for(&mut victim, &proxies[0], "a download in flight", |gets| {
            in_flight(gets).is_some()
        });
        victim.kill().unwrap();
        assert!(!victim.wait().unwrap().success());
        let victim_gets = proxies[0].shard_gets();
        let killed: Vec<String> = victim_gets
            .iter()
            .filter(|g| !g.completed)
            .map(|g| g.path.clone())
            .collect();
        assert!(!killed.is_empty());
        for (i, survivor) in survivors.into_iter().enumerate() {
            wait_success(survivor, &format!("survivor {} of round {round}", i + 1));
        }

        let total = 2 * SAMPLES_PER_CACHE;
        for report in &reports[1..] {
            assert_eq!(
                std::fs::read_to_string(report).unwrap(),
                format!("ok {total}")
            );
        }
        // Shard GETs per object: by the survivors (all), and completed by anyone.
        let mut by_survivors: BTreeMap<String, u64> = BTreeMap::new();
        let mut completed: BTreeMap<String, u64> = BTreeMap::new();
        for (i, proxy) in proxies.iter().enumerate() {
            for get in proxy.shard_gets() {
                let object = object_of(&get.path, &shard_objects);
                if i > 0 {
                    assert!(get.completed, "survivor {i}'s GET was cut: {get:?}");
                    *by_survivors.entry(object.clone()).or_default() += 1;
                }
                if get.completed {
                    *completed.entry(object).or_default() += 1;
                }
            }
        }
        for object in &shard_objects {
            let n = by_survivors.get(object).copied().unwrap_or(0);
            assert!(
                n <= 1,
                "round {round}: {object} downloaded {n} times by the survivors"
            );
            assert!(
                completed.contains_key(object),
                "round {round}: {object} never downloaded whole"
            );
        }
        for path in &killed {
            let object = object_of(path, &shard_objects);
            assert_eq!(
                by_survivors.get(&object).copied(),
                Some(1),
                "round {round}: the victim's download of {object} was not taken over once"
            );
        }
        assert_eq!(partials_under(&cache_dir), Vec::<PathBuf>::new());
        println!(
            "round {round}: victim completed {} and was killed in {:?}; survivors made {} shard GETs for {} shards",
            victim_gets.iter().filter(|g| g.completed).count(),
            killed,
            by_survivors.values().sum::<u64>(),
            shard_objects.len()
        );
    }
}

/// The shard object (`prefix/shards/NNNNNN.bin`) a request path (`/bucket/prefix/...`) names.
fn object_of(path: &str, objects: &[String]) -> String {
    let path = path.split('?').next().unwrap_or(path);
    objects
        .iter()
        .find(|o| path.ends_with(o.as_str()))
        .unwrap_or_else(|| panic!("{path} is none of the shards"))
        .clone()
}
