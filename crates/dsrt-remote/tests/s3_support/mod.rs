//! Helpers of the S3 tests (`s3.rs`, `s3_faults.rs`, `s3_processes.rs`): the test server's
//! prefix, caches written locally and published there, a store that reaches the server
//! through an in-test HTTP proxy, and that proxy, which counts shard GETs, throttles, cuts
//! responses mid-body and plays a killed server; and a store that reaches it through the link
//! shaper (`s3_shaped.rs`).
#![allow(dead_code, clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code; each test binary uses a part.

use dsrt_dataset::Dataset;
use dsrt_remote::object_store::aws::AmazonS3Builder;
use dsrt_remote::object_store::{ClientOptions, RetryConfig};
use dsrt_remote::{
    open_remote, publish_cache, PublishOptions, RemoteError, RemoteOptions, RemotePrefix,
    StoreLocation,
};
use dsrt_schema::{Column, ColumnType, Schema, ValueRef};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The bucket of the configured test server; without one the test fails and says why. Only a
/// loopback endpoint is accepted.
pub(crate) fn bucket(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. Run \
             `cargo xtask test`, or `bash .ci/s3-server.sh start DIR` and `source DIR/env` first."
        );
    };
    upstream();
    bucket
}

/// The server's address, from `AWS_ENDPOINT_URL` (which must be on loopback).
pub(crate) fn upstream() -> SocketAddr {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    dsrt_atlas_link_shaper::loopback_addr(&endpoint)
        .unwrap_or_else(|| panic!("AWS_ENDPOINT_URL ('{endpoint}') is not on loopback"))
}

/// A fresh prefix for `test` on the server, configured from the environment.
pub(crate) fn s3_prefix(test: &str) -> RemotePrefix {
    let bucket = bucket(test);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let url = format!(
        "s3://{bucket}/dsrt-remote-faults/{test}-{}-{nanos}",
        std::process::id()
    );
    StoreLocation::parse(&url)
        .unwrap()
        .as_remote()
        .unwrap()
        .clone()
}

/// `prefix` (a prefix of the test server's bucket) seen through the proxy at `proxy`: a
/// store built from the environment with the proxy as its endpoint, object_store's own
/// retries off (so the only retries are dsrt-remote's, and each attempt is one request) and a
/// request timeout of `timeout`.
pub(crate) fn through_proxy(
    prefix: &RemotePrefix,
    proxy: SocketAddr,
    timeout: Duration,
) -> RemotePrefix {
    let builder = AmazonS3Builder::from_env()
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .with_client_options(
            ClientOptions::new()
                .with_timeout(timeout)
                .with_connect_timeout(Duration::from_secs(2)),
        );
    via(prefix, proxy, "proxy", builder)
}

/// `prefix` (a prefix of the test server's bucket) seen through a link shaper at `shaper`: a
/// store built from the environment with the shaper as its endpoint and object_store's
/// default retries and timeouts, as a job's client has.
pub(crate) fn through_shaper(prefix: &RemotePrefix, shaper: SocketAddr) -> RemotePrefix {
    via(prefix, shaper, "link shaper", AmazonS3Builder::from_env())
}

/// `prefix` through the endpoint at `addr` (a `what`), with the store `builder` makes.
fn via(
    prefix: &RemotePrefix,
    addr: SocketAddr,
    what: &str,
    builder: AmazonS3Builder,
) -> RemotePrefix {
    let bucket = std::env::var("ATLAS_S3_TEST_BUCKET").unwrap();
    let store = builder
        .with_bucket_name(&bucket)
        .with_endpoint(format!("http://{addr}"))
        .with_allow_http(true)
        .build()
        .unwrap();
    RemotePrefix::new(
        Arc::new(store),
        prefix.prefix().clone(),
        format!("{} (via {what} {addr})", prefix.url()),
    )
}

/// Payload `i` of the test caches with `seed`: 1-6 KiB of bytes that depend on both.
pub(crate) fn payload(seed: u64, i: u64) -> Vec<u8> {
    let len = 1024 + (i.wrapping_mul(2_654_435_761) ^ seed) % 5120;
    (0..len)
        .map(|b| (b.wrapping_mul(31) ^ i.wrapping_mul(7919) ^ seed.wrapping_mul(131)) as u8)
        .collect()
}

/// Writes a cache `name` of `samples` samples of [`payload`]`(seed, i)` into `dir/name` in
/// shards of at most `shard_bytes`, and returns its directory.
pub(crate) fn write_cache(
    dir: &Path,
    name: &str,
    samples: u64,
    seed: u64,
    shard_bytes: u64,
) -> PathBuf {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new(name, schema).max_shard_bytes(shard_bytes);
    let path = dir.join(name);
    let mut writer = CacheWriter::create(&path, options).unwrap();
    for i in 0..samples {
        writer
            .add_values(&payload(seed, i), &[ValueRef::Int64(i as i64)])
            .unwrap();
    }
    writer.finish().unwrap();
    path
}

/// Writes a cache as [`write_cache`] does and publishes it under `to`; returns the local copy.
pub(crate) fn publish(
    dir: &Path,
    name: &str,
    to: &RemotePrefix,
    samples: u64,
    seed: u64,
    shard_bytes: u64,
) -> PathBuf {
    let local = write_cache(dir, name, samples, seed, shard_bytes);
    publish_cache(&local, to, &PublishOptions::default()).unwrap();
    local
}

/// The cache under `remote`, opened with `options`, as a dataset of that one cache.
pub(crate) fn one_cache_dataset(remote: &RemotePrefix, options: &RemoteOptions) -> Arc<Dataset> {
    let cache = open_remote(remote, options).unwrap();
    Arc::new(Dataset::from_caches(vec![(PathBuf::from(remote.url()), cache)]).unwrap())
}

/// The shard files of the local cache at `dir`, sorted.
pub(crate) fn shard_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("shards"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every regular file under `dir`, recursively.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if !dsrt_atlas_test_runner::is_shard_cache_bookkeeping(&entry.file_name()) {
            out.push(path);
        }
    }
    out
}

/// The partial files (downloads in progress or left by a dead one) under `dir`.
pub(crate) fn partials_under(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".shard-cache-partial."))
        .collect()
}

/// The [`RemoteError`] somewhere in `error`'s source chain. An `io::Error` wrapping another
/// error hides it from `source()` (which skips to the inner error's own source), so it is
/// looked at through `get_ref()`.
pub(crate) fn remote_error<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a RemoteError> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(remote) = e.downcast_ref::<RemoteError>() {
            return Some(remote);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if let Some(inner) = io.get_ref() {
                current = Some(inner as &(dyn std::error::Error + 'static));
                continue;
            }
        }
        current = e.source();
    }
    None
}

/// What the proxy does with shard GETs (`GET .../shards/NNNNNN.bin` answered whole, 200);
/// other requests, range GETs of a record included, are always forwarded whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Forward everything.
    Forward,
    /// Cut every shard response after this many body bytes (closing the connection).
    CutShardsAfter(u64),
    /// Cut the next shard response after this many body bytes, then play a dead server: close
    /// every open connection and every new one at once.
    KillDuringShard(u64),
    /// A dead server: every connection is closed as soon as it is accepted.
    Refuse,
}

/// One shard GET the proxy forwarded.
#[derive(Debug, Clone)]
pub(crate) struct ShardGet {
    /// The request path (`/bucket/prefix/shards/000003.bin`).
    pub(crate) path: String,
    /// Response body bytes forwarded to the client.
    pub(crate) forwarded: u64,
    /// The response's whole body was forwarded.
    pub(crate) completed: bool,
}

#[derive(Default)]
struct Shared {
    mode: Mutex<Option<Mode>>,
    /// `(bytes, pause)`: shard bodies go out `bytes` at a time with `pause` after each piece.
    throttle: Mutex<Option<(usize, Duration)>>,
    gets: Mutex<Vec<ShardGet>>,
    requests: AtomicU64,
    refused: AtomicU64,
    /// The open client connections, by number, for `kill` to close; each connection removes
    /// its own when it ends.
    live: Mutex<std::collections::HashMap<u64, TcpStream>>,
    connections: AtomicU64,
}

/// An HTTP/1.1 proxy on 127.0.0.1 in front of the test server. It forwards one request and
/// its response at a time per connection (keep-alive works; the client does not pipeline),
/// parsing request and response heads, so it knows which responses are shard downloads and
/// when each one's body is complete.
pub(crate) struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Starts a proxy to `upstream` on a free port.
    pub(crate) fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        *shared.mode.lock().unwrap() = Some(Mode::Forward);
        let accept_shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if accept_shared.mode() == Mode::Refuse {
                    accept_shared.refused.fetch_add(1, Ordering::SeqCst);
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let shared = Arc::clone(&accept_shared);
                std::thread::spawn(move || {
                    let id = shared.connections.fetch_add(1, Ordering::SeqCst);
                    let _ = serve(&shared, id, client, upstream);
                    shared.live.lock().unwrap().remove(&id);
                });
            }
        });
        Self { addr, shared }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = Some(mode);
    }

    pub(crate) fn mode(&self) -> Mode {
        self.shared.mode()
    }

    /// Shard bodies go out `bytes` at a time with `pause` after each piece (`None`: at once).
    pub(crate) fn set_throttle(&self, throttle: Option<(usize, Duration)>) {
        *self.shared.throttle.lock().unwrap() = throttle;
    }

    /// Every shard GET so far, in the order they started.
    pub(crate) fn shard_gets(&self) -> Vec<ShardGet> {
        self.shared.gets.lock().unwrap().clone()
    }

    /// Requests forwarded so far (of any kind).
    pub(crate) fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Connections closed at once because the proxy played a dead server.
    pub(crate) fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }
}

impl Shared {
    fn mode(&self) -> Mode {
        self.mode.lock().unwrap().unwrap_or(Mode::Forward)
    }

    /// Plays a dead server: refuses new connections and closes the open ones.
    fn kill(&self) {
        *self.mode.lock().unwrap() = Some(Mode::Refuse);
        for (_, stream) in self.live.lock().unwrap().drain() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// A request or response head: its first line and its headers, lower-cased names.
struct Head {
    raw: Vec<u8>,
    first: String,
    headers: Vec<(String, String)>,
}

impl Head {
    /// Reads a head (up to the empty line); `None` at a clean end of the stream.
    fn read(from: &mut impl BufRead) -> std::io::Result<Option<Self>> {
        let mut raw = Vec::new();
        let mut lines = Vec::new();
        loop {
            let mut line = Vec::new();
            if from.read_until(b'\n', &mut line)? == 0 {
                return if raw.is_empty() {
                    Ok(None)
                } else {
                    Err(std::io::ErrorKind::UnexpectedEof.into())
                };
            }
            raw.extend_from_slice(&line);
            let text = String::from_utf8_lossy(&line).trim_end().to_owned();
            if text.is_empty() {
                break;
            }
            lines.push(text);
        }
        let first = lines.first().cloned().unwrap_or_default();
        let headers = lines
            .iter()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Ok(Some(Self {
            raw,
            first,
            headers,
        }))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> Option<u64> {
        self.header("content-length").and_then(|v| v.parse().ok())
    }

    fn chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    }
}

/// Forwards the requests of one client connection, one at a time.
fn serve(shared: &Shared, id: u64, client: TcpStream, upstream: SocketAddr) -> std::io::Result<()> {
    let timeout = Some(Duration::from_secs(120));
    client.set_read_timeout(timeout)?;
    let server = TcpStream::connect(upstream)?;
    server.set_read_timeout(timeout)?;
    shared.live.lock().unwrap().insert(id, client.try_clone()?);
    let mut client_in = BufReader::new(client.try_clone()?);
    let mut client_out = client;
    let mut server_in = BufReader::new(server.try_clone()?);
    let mut server_out = server;
    while let Some(request) = Head::read(&mut client_in)? {
        if shared.mode() == Mode::Refuse {
            break;
        }
        shared.requests.fetch_add(1, Ordering::SeqCst);
        server_out.write_all(&request.raw)?;
        let request_body = request.content_length().unwrap_or(0);
        copy_exact(&mut client_in, &mut server_out, request_body)?;
        let mut parts = request.first.split(' ');
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let shard_get = method == "GET"
            && path.contains("/shards/")
            && path.split('?').next().unwrap_or("").ends_with(".bin");
        let Some(response) = Head::read(&mut server_in)? else {
            break;
        };
        client_out.write_all(&response.raw)?;
        let status: u16 = response
            .first
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let no_body = method == "HEAD" || status == 204 || status == 304 || status < 200;
        if no_body {
            continue;
        }
        if response.chunked() {
            copy_chunked(&mut server_in, &mut client_out)?;
            continue;
        }
        let Some(len) = response.content_length() else {
            // Delimited by the end of the connection.
            std::io::copy(&mut server_in, &mut client_out)?;
            break;
        };
        // A range GET (206) reads one record, not the shard: it is forwarded as it comes.
        if !shard_get || status != 200 {
            copy_exact(&mut server_in, &mut client_out, len)?;
            continue;
        }
        let index = {
            let mut gets = shared.gets.lock().unwrap();
            gets.push(ShardGet {
                path: path.to_owned(),
                forwarded: 0,
                completed: false,
            });
            gets.len() - 1
        };
        if !forward_shard(shared, index, &mut server_in, &mut client_out, len)? {
            let _ = client_out.shutdown(Shutdown::Both);
            let _ = server_out.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
    let _ = client_out.shutdown(Shutdown::Both);
    Ok(())
}

/// Forwards a shard body of `len` bytes, throttled and cut as the mode says; whether the
/// connection may go on.
fn forward_shard(
    shared: &Shared,
    index: usize,
    from: &mut impl Read,
    to: &mut impl Write,
    len: u64,
) -> std::io::Result<bool> {
    let cut = match shared.mode() {
        Mode::CutShardsAfter(n) | Mode::KillDuringShard(n) => Some(n.min(len.saturating_sub(1))),
        Mode::Forward | Mode::Refuse => None,
    };
    let mut done = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    while done < len {
        let throttle = *shared.throttle.lock().unwrap();
        let piece = throttle.map_or(buf.len(), |(bytes, _)| bytes.min(buf.len()));
        let mut want = piece.min((len - done) as usize);
        if let Some(cut) = cut {
            want = want.min((cut - done.min(cut)) as usize);
            if want == 0 {
                if matches!(shared.mode(), Mode::KillDuringShard(_)) {
                    shared.kill();
                }
                return Ok(false);
            }
        }
        let n = from.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        to.write_all(&buf[..n])?;
        to.flush()?;
        done += n as u64;
        shared.gets.lock().unwrap()[index].forwarded = done;
        if let Some((_, pause)) = throttle {
            std::thread::sleep(pause);
        }
    }
    shared.gets.lock().unwrap()[index].completed = true;
    Ok(true)
}

fn copy_exact(from: &mut impl Read, to: &mut impl Write, len: u64) -> std::io::Result<()> {
    let copied = std::io::copy(&mut from.take(len), to)?;
    if copied == len {
        Ok(())
    } else {
        Err(std::io::ErrorKind::UnexpectedEof.into())
    }
}

/// Forwards a chunked body up to and including its last chunk and trailers.
fn copy_chunked(from: &mut impl BufRead, to: &mut impl Write) -> std::io::Result<()> {
    loop {
        let mut line = Vec::new();
        from.read_until(b'\n', &mut line)?;
        to.write_all(&line)?;
        let text = String::from_utf8_lossy(&line);
        let size = u64::from_str_radix(text.trim().split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
        if size == 0 {
            loop {
                let mut trailer = Vec::new();
                from.read_until(b'\n', &mut trailer)?;
                to.write_all(&trailer)?;
                if trailer.is_empty() || trailer == b"\r\n" {
                    return Ok(());
                }
            }
        }
        copy_exact(from, to, size + 2)?;
    }
}
