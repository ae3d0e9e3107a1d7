//! A loopback TCP proxy that shapes a link like a far object store, for tests and benchmarks.
//!
//! What it is for: putting a local S3-compatible server (the suites' SeaweedFS) behind a link
//! that behaves like S3 seen from a nearby instance, so that what decides real epochs is
//! exercised: each request waits a time to first byte before its response starts
//! ([`LinkShape::first_byte`]), and bytes flow at most at a rate per connection
//! ([`LinkShape::per_connection`]) and at a rate over every connection
//! ([`LinkShape::total`]), each direction on its own (a link is full duplex). A client then
//! needs several requests in flight to fill the link, and its first sample waits for round
//! trips as it would in a data centre.
//!
//! It knows nothing of HTTP beyond its turns: a request starts with the first byte the client
//! sends after the last byte of a response (HTTP/1.1 without pipelining, which is what
//! `object_store` speaks to a plain `http://` endpoint), and that request's response is held
//! until its time to first byte has passed. Everything is bounded in time: a connection idle
//! for [`IDLE_TIMEOUT`] is closed, and dropping the [`Shaper`] closes every connection.
//!
//! What it is not for: injecting faults (the remote tests' fault proxy does that), TLS, or
//! production use.
//!
//! Layering: a tool beside the library stack, with no workspace dependency; only tests and
//! benchmarks depend on it.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a connection may sit idle before the shaper closes it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Bytes a pump moves at most per step: small enough that pacing is smooth (0.8 ms at
/// 80 MB/s), large enough that the system calls cost little.
const PIECE: usize = 64 * 1024;

/// Credit a pace keeps for time it was idle, so that sleeping a little late does not lower
/// the rate: without it every overshoot of `sleep` would be lost for good.
const CATCH_UP: Duration = Duration::from_millis(2);

/// The address of a plain-http loopback endpoint (`http://127.0.0.1:PORT` or
/// `http://localhost:PORT`, as the S3 test server's `AWS_ENDPOINT_URL` is): what a shaper in
/// front of it forwards to. `None` for any other endpoint.
pub fn loopback_addr(endpoint: &str) -> Option<SocketAddr> {
    let port = ["http://127.0.0.1:", "http://localhost:"]
        .iter()
        .find_map(|prefix| endpoint.strip_prefix(prefix))?;
    let port = port.trim_end_matches('/').parse::<u16>().ok()?;
    Some(SocketAddr::from(([127, 0, 0, 1], port)))
}

/// How a link behaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkShape {
    /// Time from a request's first byte reaching the proxy to its response's first byte
    /// leaving it (beyond whatever the server itself takes).
    pub first_byte: Duration,
    /// Bytes per second one connection carries at most, in each direction.
    pub per_connection: f64,
    /// Bytes per second all connections carry at most together, in each direction.
    pub total: f64,
}

impl LinkShape {
    /// S3 from an instance in the same region: 20 ms to first byte, 80 MB/s per connection,
    /// 400 MB/s in all.
    pub const S3_NEARBY: Self = Self {
        first_byte: Duration::from_millis(20),
        per_connection: 80e6,
        total: 400e6,
    };
}

impl Default for LinkShape {
    fn default() -> Self {
        Self::S3_NEARBY
    }
}

/// What the shaper has carried so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Connections accepted.
    pub connections: u64,
    /// Requests (turns) seen.
    pub requests: u64,
    /// Bytes carried from the server to clients.
    pub bytes_down: u64,
    /// Bytes carried from clients to the server.
    pub bytes_up: u64,
    /// The most requests that were in flight at once: sent and not yet answered in full (a
    /// response of no declared length counts until the client speaks again or closes).
    pub peak_in_flight: u64,
}

/// A rate as a virtual clock: the moment the bytes reserved so far have been carried.
#[derive(Debug)]
struct Pace {
    seconds_per_byte: f64,
    free_at: Instant,
}

impl Pace {
    fn new(bytes_per_second: f64) -> Self {
        Self {
            seconds_per_byte: 1.0 / bytes_per_second.max(1.0),
            free_at: Instant::now(),
        }
    }

    /// Reserves `bytes` of the rate; returns when they will have been carried.
    fn reserve(&mut self, bytes: usize, now: Instant) -> Instant {
        let earliest = now.checked_sub(CATCH_UP).unwrap_or(now);
        let start = self.free_at.max(earliest);
        #[allow(clippy::cast_precision_loss)] // a piece is at most 64 KiB
        let busy = Duration::from_secs_f64(bytes as f64 * self.seconds_per_byte);
        self.free_at = start + busy;
        self.free_at
    }
}

/// What every connection shares.
#[derive(Debug)]
struct Shared {
    shape: LinkShape,
    total_down: Mutex<Pace>,
    total_up: Mutex<Pace>,
    connections: AtomicU64,
    requests: AtomicU64,
    bytes_down: AtomicU64,
    bytes_up: AtomicU64,
    in_flight: AtomicU64,
    peak_in_flight: AtomicU64,
    stopped: AtomicBool,
    /// The open connections' sockets (client side, server side), by connection number, so
    /// that dropping the shaper can close them; a connection removes its own when it ends.
    live: Mutex<std::collections::HashMap<u64, [TcpStream; 2]>>,
}

/// One connection's turn state, shared by its two pumps.
#[derive(Debug, Default)]
struct Turn {
    /// When the current request's first byte arrived; `None` once its response has started
    /// (or before any request).
    waiting_since: Option<Instant>,
    /// The current request is a `HEAD`: its response has no body, whatever it declares.
    head_request: bool,
    /// A request was seen and its response not yet carried in full.
    open: bool,
    /// Response bytes (head and body) still to carry before the turn ends, where the
    /// response's head said (`Content-Length`); `None` where it did not (chunked, or a head
    /// longer than one piece): such a turn ends when the client speaks again.
    response_left: Option<u64>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running shaper: a listener on 127.0.0.1 that forwards each connection to the upstream
/// server through the link's shape. Dropping it stops it.
#[derive(Debug)]
pub struct Shaper {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Shaper {
    /// Starts a shaper in front of `upstream` on a free loopback port.
    pub fn start(upstream: SocketAddr, shape: LinkShape) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            shape,
            total_down: Mutex::new(Pace::new(shape.total)),
            total_up: Mutex::new(Pace::new(shape.total)),
            connections: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            bytes_down: AtomicU64::new(0),
            bytes_up: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            peak_in_flight: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            live: Mutex::default(),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("link-shaper-accept".into())
            .spawn(move || accept_loop(&listener, &accept_shared, upstream))?;
        Ok(Self {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, for an S3 endpoint setting.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The link's shape.
    pub fn shape(&self) -> LinkShape {
        self.shared.shape
    }

    /// What the shaper has carried so far.
    pub fn stats(&self) -> LinkStats {
        let s = &self.shared;
        LinkStats {
            connections: s.connections.load(Ordering::SeqCst),
            requests: s.requests.load(Ordering::SeqCst),
            bytes_down: s.bytes_down.load(Ordering::SeqCst),
            bytes_up: s.bytes_up.load(Ordering::SeqCst),
            peak_in_flight: s.peak_in_flight.load(Ordering::SeqCst),
        }
    }

    /// Forgets the peak of requests in flight (counted again from the ones in flight now).
    pub fn reset_peak(&self) {
        let now = self.shared.in_flight.load(Ordering::SeqCst);
        self.shared.peak_in_flight.store(now, Ordering::SeqCst);
    }
}

impl Drop for Shaper {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for stream in lock(&self.shared.live).drain().flat_map(|(_, pair)| pair) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>, upstream: SocketAddr) {
    for client in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let shared = Arc::clone(shared);
        let _ = std::thread::Builder::new()
            .name("link-shaper-conn".into())
            .spawn(move || {
                let _ = connection(&shared, client, upstream);
            });
    }
}

/// Carries one client connection to a connection of its own to the upstream server.
fn connection(
    shared: &Arc<Shared>,
    client: TcpStream,
    upstream: SocketAddr,
) -> std::io::Result<()> {
    let server = TcpStream::connect(upstream)?;
    for stream in [&client, &server] {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
        stream.set_write_timeout(Some(IDLE_TIMEOUT))?;
    }
    let id = shared.connections.fetch_add(1, Ordering::SeqCst);
    let sockets = [client.try_clone()?, server.try_clone()?];
    lock(&shared.live).insert(id, sockets);
    let turn = Arc::new(Mutex::new(Turn::default()));
    let up = {
        let (shared, turn) = (Arc::clone(shared), Arc::clone(&turn));
        let (from, to) = (client.try_clone()?, server.try_clone()?);
        std::thread::Builder::new()
            .name("link-shaper-up".into())
            .spawn(move || pump(&shared, &turn, from, to, Direction::Up))?
    };
    pump(shared, &turn, server, client, Direction::Down);
    let _ = up.join();
    if std::mem::take(&mut lock(&turn).open) {
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
    lock(&shared.live).remove(&id);
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Client to server: requests.
    Up,
    /// Server to client: responses.
    Down,
}

/// Moves bytes one way until either side closes, paced by the connection's and the link's
/// rates; requests start turns, and a turn's first response byte waits for its time to first
/// byte.
fn pump(
    shared: &Shared,
    turn: &Mutex<Turn>,
    mut from: TcpStream,
    mut to: TcpStream,
    way: Direction,
) {
    let mut own = Pace::new(shared.shape.per_connection);
    let mut buf = vec![0u8; PIECE];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let piece = &buf[..n];
        match way {
            Direction::Up => start_turn(shared, turn, piece),
            Direction::Down => {
                let waiting_since = start_response(turn, piece);
                if let Some(since) = waiting_since {
                    sleep_until(since + shared.shape.first_byte);
                }
            }
        }
        let total = match way {
            Direction::Up => &shared.total_up,
            Direction::Down => &shared.total_down,
        };
        let now = Instant::now();
        let done_at = own.reserve(n, now).max(lock(total).reserve(n, now));
        sleep_until(done_at);
        if to.write_all(piece).is_err() {
            break;
        }
        match way {
            Direction::Up => shared.bytes_up.fetch_add(n as u64, Ordering::Relaxed),
            Direction::Down => {
                response_carried(shared, turn, n as u64);
                shared.bytes_down.fetch_add(n as u64, Ordering::Relaxed)
            }
        };
    }
    // The other pump then sees its end too.
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// Client bytes: the first after a response has started (or the first ever) begin a request.
fn start_turn(shared: &Shared, turn: &Mutex<Turn>, piece: &[u8]) {
    let mut turn = lock(turn);
    if turn.waiting_since.is_some() {
        return; // more of the same request (its body)
    }
    turn.waiting_since = Some(Instant::now());
    turn.head_request = piece.starts_with(b"HEAD ");
    turn.response_left = None;
    shared.requests.fetch_add(1, Ordering::SeqCst);
    if turn.open {
        return; // the previous request's turn ends as this one begins: in flight unchanged
    }
    turn.open = true;
    let in_flight = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.peak_in_flight.fetch_max(in_flight, Ordering::SeqCst);
}

/// Server bytes: the first of a response end the request's wait (returned, to be slept out)
/// and say from the response's head how long the response is.
fn start_response(turn: &Mutex<Turn>, piece: &[u8]) -> Option<Instant> {
    let mut turn = lock(turn);
    let since = turn.waiting_since.take()?;
    turn.response_left = response_length(piece, turn.head_request);
    Some(since)
}

/// `n` more response bytes carried: the turn ends with the response's last byte.
fn response_carried(shared: &Shared, turn: &Mutex<Turn>, n: u64) {
    let mut turn = lock(turn);
    let Some(left) = turn.response_left else {
        return;
    };
    let left = left.saturating_sub(n);
    turn.response_left = Some(left);
    if left == 0 && turn.open && turn.waiting_since.is_none() {
        turn.open = false;
        turn.response_left = None;
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The length of an HTTP/1.1 response, head included, from its first bytes: `None` unless
/// they hold the whole head and it declares a length (or has no body).
fn response_length(first: &[u8], head_request: bool) -> Option<u64> {
    let head_len = first.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&first[..head_len]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let body = if head_request || status < 200 || status == 204 || status == 304 {
        0
    } else {
        lines
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse::<u64>().ok())?
    };
    Some(head_len as u64 + body)
}

fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        std::thread::sleep(deadline - now);
    }
}
