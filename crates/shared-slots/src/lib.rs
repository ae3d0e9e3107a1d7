//! Fixed-size slots of shared memory that one process fills and another reads in place.
//!
//! What it is for: handing large values (a training batch's columns, megabytes each) from one
//! process to another on the same machine without sending their bytes through a pipe and
//! without mapping fresh memory for each one. A filler process owns an [`Arena`]: one file
//! (under `/dev/shm` where it exists) of `slots` slots of `slot_bytes` each, mapped once. It
//! claims a free slot ([`Arena::try_fill`]), writes into it and sends the [`Ticket`] (the arena's
//! path, the slot, its generation) any way it likes; the reader maps the arena once
//! ([`Inbox`]), takes the slot ([`Arena::receive`]) and reads it in place for as long as it
//! keeps the [`ReceivedSlot`]. Dropping that frees the slot for the filler's next value.
//!
//! Each slot has one state word in the arena's header, changed only by compare-and-swap or by
//! its current owner: `free` -> `filling` (a filler's claim) -> `sent` (the filler let go) ->
//! `received` (the reader's claim) -> `free`. A generation counted in the same word names each
//! fill, so a ticket received once, or one from an earlier fill, is refused, never read twice.
//! A filler that finds no free slot gets `None` and sends its value some other way: a reader
//! that keeps its slots is never waited for.
//!
//! Files: the filler creates the arena (mode 0600); the first reader to open it unlinks it, so
//! it lives only as long as the two mappings do. An arena whose filler died before any reader
//! opened it is removed by the next arena created in the same directory.
//!
//! What it is not for: values that outlive either process, readers on other machines, more
//! than one reader of a slot, or processes that do not trust each other (a process of the same
//! user can write into an arena it can open).
//!
//! Layering: bottom layer, no workspace dependency; used by `dsrt-token-stream` (its batches
//! from DataLoader workers) and, through it, the Python binding.
// `unsafe` only where the mapping is read and written: the header's atomics and the slots'
// bytes (each with its SAFETY comment).
#![deny(unsafe_code)]

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The first 8 bytes of every arena file.
const MAGIC: [u8; 8] = *b"DSRTSLT1";
/// Header fields (u64 each): magic, slots, slot bytes, the filler's process id.
const SLOTS_AT: usize = 8;
const SLOT_BYTES_AT: usize = 16;
const CREATOR_AT: usize = 24;
/// The slots' state words start here, one u64 each.
const STATES_AT: usize = 64;
/// Slots start on a page, so every slot is aligned for any value type.
const PAGE: usize = 4096;
/// File names start with this, then the filler's process id and a number.
const FILE_PREFIX: &str = "datasetrt-slots-";

const FREE: u64 = 0;
const FILLING: u64 = 1;
const SENT: u64 = 2;
const RECEIVED: u64 = 3;
const STATE_BITS: u64 = 0b11;

fn state_name(word: u64) -> &'static str {
    match word & STATE_BITS {
        FREE => "free",
        FILLING => "being filled",
        SENT => "sent",
        _ => "received",
    }
}

/// What went wrong with an arena or a slot, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// Creating, sizing, opening or mapping the arena's file failed.
    #[error("shared slots {}: {source}", path.display())]
    Io {
        /// The arena's file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The directory has no room for the arena (a small `/dev/shm`, as containers often
    /// have): a resource running out, not a broken file.
    #[error(
        "shared slots {}: no room for {bytes} bytes of shared memory (is /dev/shm small?)",
        path.display()
    )]
    NoSpace {
        /// The arena's file.
        path: PathBuf,
        /// The arena's size.
        bytes: usize,
    },
    /// The file is not an arena, or not a whole one.
    #[error("shared slots {}: not an arena file: {what}", path.display())]
    NotAnArena {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A ticket for a slot that is not waiting for it: received already, or from a fill that
    /// is over.
    #[error(
        "shared slots {}: slot {slot} of generation {generation} is not waiting to be \
         received (it is {found}, generation {found_generation})",
        path.display()
    )]
    NotSent {
        /// The arena's file.
        path: PathBuf,
        /// The slot.
        slot: u32,
        /// The ticket's generation.
        generation: u64,
        /// The slot's state now.
        found: &'static str,
        /// The slot's generation now.
        found_generation: u64,
    },
}

/// What a reader needs to take a filled slot: small enough for any channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The arena's file.
    pub path: PathBuf,
    /// The slot's number in the arena.
    pub slot: u32,
    /// The fill the slot holds.
    pub generation: u64,
}

/// One file of `slots` slots of `slot_bytes`, mapped (see the module).
#[derive(Debug)]
pub struct Arena {
    map: memmap2::MmapRaw,
    path: PathBuf,
    slots: usize,
    slot_bytes: usize,
    data_at: usize,
    /// Where the next claim starts looking, so slots are used in turn.
    cursor: AtomicUsize,
}

fn round_up(value: usize, to: usize) -> usize {
    value.div_ceil(to) * to
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> SlotError + '_ {
    move |source| SlotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether process `pid` may still be running (where `/proc` cannot tell, it may).
fn alive(pid: u64) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

impl Arena {
    /// The directory arenas are made in: `/dev/shm` where it exists (memory, never written
    /// back to a disk), else the temporary directory.
    pub fn default_dir() -> PathBuf {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    }

    /// A new arena of `slots` slots of at least `slot_bytes` each in `dir`, every byte
    /// reserved now: a directory without room is [`SlotError::NoSpace`] here, never a fault
    /// when a slot is first written.
    pub fn create(dir: &Path, slots: usize, slot_bytes: usize) -> Result<Arc<Self>, SlotError> {
        remove_orphans(dir);
        let slot_bytes = round_up(slot_bytes.max(1), PAGE);
        let data_at = round_up(STATES_AT + 8 * slots, PAGE);
        let bytes = data_at + slots * slot_bytes;
        static CREATED: AtomicUsize = AtomicUsize::new(0);
        let path = dir.join(format!(
            "{FILE_PREFIX}{}-{}-{}",
            std::process::id(),
            CREATED.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_error(&path))?;
        let reserved = reserve(&mut file, bytes);
        let map = reserved.and_then(|()| memmap2::MmapRaw::map_raw(&file));
        let map = match map {
            Ok(map) => map,
            Err(error) => {
                let _ = std::fs::remove_file(&path);
                return Err(match error.kind() {
                    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
                        SlotError::NoSpace { path, bytes }
                    }
                    _ => SlotError::Io {
                        path,
                        source: error,
                    },
                });
            }
        };
        let arena = Self {
            map,
            path,
            slots,
            slot_bytes,
            data_at,
            cursor: AtomicUsize::new(0),
        };
        // The header, through the same atomics readers use (nothing else maps the file yet).
        arena
            .word(0)
            .store(u64::from_le_bytes(MAGIC), Ordering::Relaxed);
        arena.word(SLOTS_AT).store(slots as u64, Ordering::Relaxed);
        arena
            .word(SLOT_BYTES_AT)
            .store(slot_bytes as u64, Ordering::Relaxed);
        arena
            .word(CREATOR_AT)
            .store(u64::from(std::process::id()), Ordering::Release);
        Ok(Arc::new(arena))
    }

    /// Maps the arena at `path` (made by [`Arena::create`] in some process), checking that it
    /// is a whole one.
    pub fn open(path: &Path) -> Result<Arc<Self>, SlotError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_error(path))?;
        let len = file.metadata().map_err(io_error(path))?.len();
        let bad = |what: String| SlotError::NotAnArena {
            path: path.to_path_buf(),
            what,
        };
        if len < (STATES_AT + PAGE) as u64 {
            return Err(bad(format!("{len} bytes, fewer than a header")));
        }
        let map = memmap2::MmapRaw::map_raw(&file).map_err(io_error(path))?;
        let mut arena = Self {
            map,
            path: path.to_path_buf(),
            slots: 0,
            slot_bytes: 0,
            data_at: 0,
            cursor: AtomicUsize::new(0),
        };
        if arena.word(0).load(Ordering::Acquire).to_le_bytes() != MAGIC {
            return Err(bad("no arena magic".into()));
        }
        let field = |at: usize| usize::try_from(arena.word(at).load(Ordering::Acquire)).ok();
        let (slots, slot_bytes) = (field(SLOTS_AT), field(SLOT_BYTES_AT));
        let size = slots.zip(slot_bytes).and_then(|(slots, slot_bytes)| {
            let data_at = round_up(STATES_AT.checked_add(slots.checked_mul(8)?)?, PAGE);
            Some((
                data_at,
                data_at.checked_add(slots.checked_mul(slot_bytes)?)?,
            ))
        });
        match (slots, slot_bytes, size) {
            (Some(slots), Some(slot_bytes), Some((data_at, total)))
                if total as u64 == len && slot_bytes % PAGE == 0 =>
            {
                arena.slots = slots;
                arena.slot_bytes = slot_bytes;
                arena.data_at = data_at;
                Ok(Arc::new(arena))
            }
            _ => Err(bad(format!(
                "{slots:?} slots of {slot_bytes:?} bytes do not make its {len} bytes"
            ))),
        }
    }

    /// The arena's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Slots in the arena.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Bytes per slot.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// The process that made the arena.
    fn creator(&self) -> u64 {
        self.word(CREATOR_AT).load(Ordering::Acquire)
    }

    /// The header's u64 at `at` (a multiple of 8 below the first slot).
    fn word(&self, at: usize) -> &AtomicU64 {
        assert!(at % 8 == 0 && at + 8 <= STATES_AT.max(self.data_at) && at + 8 <= self.map.len());
        // SAFETY: `at` is 8-aligned inside the mapping's header (asserted), and the mapping
        // starts on a page, so the pointer is aligned for an `AtomicU64`, which has the size
        // and layout of a `u64`. The reference borrows `self`, which keeps the mapping. Every
        // process that maps the file reads and writes these words only as atomics.
        #[allow(unsafe_code)]
        unsafe {
            &*(self.map.as_ptr().add(at).cast::<AtomicU64>())
        }
    }

    fn state(&self, slot: usize) -> &AtomicU64 {
        self.word(STATES_AT + 8 * slot)
    }

    /// A free slot to fill, claimed for this process, or `None` if every slot is taken.
    pub fn try_fill(self: &Arc<Self>) -> Option<FillSlot> {
        let start = self.cursor.fetch_add(1, Ordering::Relaxed);
        for i in 0..self.slots {
            let slot = (start + i) % self.slots;
            let word = self.state(slot).load(Ordering::Acquire);
            let Ok(index) = u32::try_from(slot) else {
                continue;
            };
            if word & STATE_BITS != FREE {
                continue;
            }
            let generation = (word >> 2) + 1;
            let claimed = (generation << 2) | FILLING;
            if self
                .state(slot)
                .compare_exchange(word, claimed, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Some(FillSlot {
                    arena: Arc::clone(self),
                    slot: index,
                    generation,
                    sent: false,
                });
            }
        }
        None
    }

    /// Takes the slot a ticket names (its file must be this arena's): the slot must be `sent`
    /// in the ticket's generation.
    pub fn receive(self: &Arc<Self>, ticket: &Ticket) -> Result<ReceivedSlot, SlotError> {
        let slot = ticket.slot as usize;
        let not_sent = |found: u64| SlotError::NotSent {
            path: self.path.clone(),
            slot: ticket.slot,
            generation: ticket.generation,
            found: state_name(found),
            found_generation: found >> 2,
        };
        if slot >= self.slots || ticket.generation >= 1 << 62 {
            return Err(SlotError::NotAnArena {
                path: self.path.clone(),
                what: format!("a ticket for slot {slot} of {}", self.slots),
            });
        }
        let sent = (ticket.generation << 2) | SENT;
        let received = (ticket.generation << 2) | RECEIVED;
        self.state(slot)
            .compare_exchange(sent, received, Ordering::Acquire, Ordering::Acquire)
            .map_err(not_sent)?;
        Ok(ReceivedSlot {
            arena: Arc::clone(self),
            slot,
            generation: ticket.generation,
        })
    }

    fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot < self.slots);
        // In bounds: the mapping is `data_at + slots * slot_bytes` bytes (checked at open).
        self.map
            .as_mut_ptr()
            .wrapping_add(self.data_at + slot * self.slot_bytes)
    }

    /// Frees `slot` after its owner (a filler that did not send, or a reader) let go.
    fn release(&self, slot: usize, generation: u64) {
        self.state(slot)
            .store(generation << 2 | FREE, Ordering::Release);
    }
}

/// Writes `bytes` zeros into `file`, so every page exists before it is mapped (a sparse file
/// on a full tmpfs faults with SIGBUS on first write instead of failing here).
fn reserve(file: &mut File, bytes: usize) -> io::Result<()> {
    let chunk = vec![0u8; (1 << 20).min(bytes)];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        file.write_all(&chunk[..n])?;
        left -= n;
    }
    file.flush()
}

/// Removes arenas in `dir` whose filler is gone and that no reader opened (a reader unlinks
/// the file when it opens it): what a killed filler left.
fn remove_orphans(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(FILE_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u64>().ok());
        if pid.is_some_and(|pid| !alive(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A slot this process claimed to fill: write into [`FillSlot::bytes_mut`], then
/// [`FillSlot::send`]. Dropped unsent, the slot is free again.
#[derive(Debug)]
pub struct FillSlot {
    arena: Arc<Arena>,
    slot: u32,
    generation: u64,
    sent: bool,
}

impl FillSlot {
    /// The slot's bytes (page-aligned; what an earlier fill left in them until written).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let ptr = self.arena.slot_ptr(self.slot as usize);
        // SAFETY: the slot lies inside the mapping (`slot_ptr`), which `self.arena` keeps.
        // This value holds the slot's `filling` claim, won by compare-and-swap, and no process
        // touches a slot's bytes in that state but its claimant; the `&mut self` borrow makes
        // the slice the only reference to them in this process.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts_mut(ptr, self.arena.slot_bytes)
        }
    }

    /// Hands the slot over: its ticket is what a reader takes it with.
    pub fn send(mut self) -> Ticket {
        self.sent = true;
        self.arena
            .state(self.slot as usize)
            .store(self.generation << 2 | SENT, Ordering::Release);
        Ticket {
            path: self.arena.path.clone(),
            slot: self.slot,
            generation: self.generation,
        }
    }
}

impl Drop for FillSlot {
    fn drop(&mut self) {
        if !self.sent {
            self.arena.release(self.slot as usize, self.generation);
        }
    }
}

/// A slot this process received: its bytes stay as the filler wrote them until this is
/// dropped, which frees the slot.
#[derive(Debug)]
pub struct ReceivedSlot {
    arena: Arc<Arena>,
    slot: usize,
    generation: u64,
}

impl AsRef<[u8]> for ReceivedSlot {
    fn as_ref(&self) -> &[u8] {
        let ptr = self.arena.slot_ptr(self.slot);
        // SAFETY: the slot lies inside the mapping (`slot_ptr`), which `self.arena` keeps.
        // This value holds the slot's `received` claim until it drops; no process writes a
        // slot's bytes but the claimant of its `filling` state, which a slot reaches again only
        // from `free`, after this drop.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(ptr.cast_const(), self.arena.slot_bytes)
        }
    }
}

impl Drop for ReceivedSlot {
    fn drop(&mut self) {
        self.arena.release(self.slot, self.generation);
    }
}

/// Slots of the process's own arena ([`Outbox::fill`]).
const OUTBOX_SLOTS: usize = 4;

/// The arena a process fills, made on first use, in processes that asked for one
/// ([`Outbox::enable`]). One per process: a child forked after its parent enabled it makes
/// its own (the process id is checked on every use).
#[derive(Debug)]
pub struct Outbox;

#[derive(Debug)]
struct OutboxState {
    pid: u32,
    arena: Option<Arc<Arena>>,
    failed: Option<String>,
}

static OUTBOX: Mutex<Option<OutboxState>> = Mutex::new(None);

impl Outbox {
    /// Makes this process fill slots ([`Outbox::fill`] finds none otherwise).
    pub fn enable() {
        let mut outbox = OUTBOX
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let pid = std::process::id();
        if outbox.as_ref().is_none_or(|o| o.pid != pid) {
            *outbox = Some(OutboxState {
                pid,
                arena: None,
                failed: None,
            });
        }
    }

    /// Whether this process fills slots.
    pub fn enabled() -> bool {
        let outbox = OUTBOX
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        outbox.as_ref().is_some_and(|o| o.pid == std::process::id())
    }

    /// A free slot of at least `needed` bytes of this process's arena, the arena made with
    /// slots of `slot_bytes` (at least `needed`) on first use; `None` where this process does
    /// not fill slots, every slot is taken, the value does not fit or the arena could not be
    /// made ([`Outbox::failure`] says why).
    pub fn fill(needed: usize, slot_bytes: usize) -> Option<FillSlot> {
        let mut outbox = OUTBOX
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = outbox.as_mut().filter(|o| o.pid == std::process::id())?;
        if state.arena.is_none() && state.failed.is_none() {
            match Arena::create(&Arena::default_dir(), OUTBOX_SLOTS, slot_bytes.max(needed)) {
                Ok(arena) => state.arena = Some(arena),
                Err(error) => {
                    // Said once per process: every later value goes the slower way, silently.
                    tracing::warn!(
                        "no shared-memory slots in this process, values are sent another way: \
                         {error}"
                    );
                    state.failed = Some(error.to_string());
                }
            }
        }
        let arena = state.arena.as_ref()?;
        if arena.slot_bytes < needed {
            return None;
        }
        arena.try_fill()
    }

    /// Why this process's arena could not be made, if it could not.
    pub fn failure() -> Option<String> {
        let outbox = OUTBOX
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        outbox
            .as_ref()
            .filter(|o| o.pid == std::process::id())
            .and_then(|o| o.failed.clone())
    }
}

/// The arenas a process received from, mapped once each.
#[derive(Debug)]
pub struct Inbox;

static INBOX: Mutex<Option<HashMap<PathBuf, Arc<Arena>>>> = Mutex::new(None);

impl Inbox {
    /// Takes the slot `ticket` names, mapping its arena on first use (and unlinking its file:
    /// the two mappings keep it). An arena is let go once its filler is gone and none of its
    /// slots is held here.
    pub fn receive(ticket: &Ticket) -> Result<ReceivedSlot, SlotError> {
        let mut inbox = INBOX
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let arenas = inbox.get_or_insert_with(HashMap::new);
        let arena = match arenas.get(&ticket.path) {
            Some(arena) => Arc::clone(arena),
            None => {
                arenas.retain(|_, a| Arc::strong_count(a) > 1 || alive(a.creator()));
                let arena = Arena::open(&ticket.path)?;
                let _ = std::fs::remove_file(&ticket.path);
                arenas.insert(ticket.path.clone(), Arc::clone(&arena));
                arena
            }
        };
        drop(inbox);
        arena.receive(ticket)
    }

    /// Arenas mapped now.
    pub fn arenas() -> usize {
        let inbox = INBOX
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inbox.as_ref().map_or(0, HashMap::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_goes_free_filling_sent_received_free_and_a_ticket_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let arena = Arena::create(dir.path(), 2, 5000).unwrap();
        assert_eq!((arena.slots(), arena.slot_bytes()), (2, 8192));
        let reader = Arena::open(arena.path()).unwrap();

        let mut first = arena.try_fill().unwrap();
        first.bytes_mut()[..5].copy_from_slice(b"hello");
        let mut second = arena.try_fill().unwrap();
        second.bytes_mut()[0] = 7;
        assert!(arena.try_fill().is_none(), "both slots are claimed");
        let ticket = first.send();
        drop(second); // unsent: free again
        let received = reader.receive(&ticket).unwrap();
        assert_eq!(&received.as_ref()[..5], b"hello");
        let again = reader.receive(&ticket).unwrap_err();
        assert!(again.to_string().contains("is received"), "{again}");

        // The received slot stays the reader's: one slot is left to fill.
        let other = arena.try_fill().unwrap();
        assert!(arena.try_fill().is_none());
        drop(other);
        drop(received);
        let refill = arena.try_fill().unwrap();
        let next = arena.try_fill().unwrap();
        assert!(refill.generation > ticket.generation || next.generation > ticket.generation);
        // A ticket of an earlier fill is refused.
        let stale = next.send();
        let old = Ticket {
            generation: stale.generation - 1,
            ..stale.clone()
        };
        assert!(reader.receive(&old).is_err());
        assert!(reader.receive(&stale).is_ok());
    }

    #[test]
    fn a_file_that_is_not_a_whole_arena_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-an-arena");
        std::fs::write(&path, vec![1u8; 3 * PAGE]).unwrap();
        let error = Arena::open(&path).unwrap_err();
        assert!(error.to_string().contains("no arena magic"), "{error}");
        let arena = Arena::create(dir.path(), 3, PAGE).unwrap();
        let file = OpenOptions::new().write(true).open(arena.path()).unwrap();
        file.set_len((PAGE * 3) as u64).unwrap();
        let error = Arena::open(arena.path()).unwrap_err();
        assert!(error.to_string().contains("do not make its"), "{error}");
        let error = Arena::open(&dir.path().join("missing")).unwrap_err();
        assert!(matches!(error, SlotError::Io { .. }), "{error}");
    }

    #[test]
    fn orphans_of_dead_fillers_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // Process ids above the kernel's limit (2^22) are never alive.
        let dead = dir.path().join(format!("{FILE_PREFIX}4999999-0-0"));
        std::fs::write(&dead, b"x").unwrap();
        let arena = Arena::create(dir.path(), 1, PAGE).unwrap();
        assert!(!dead.exists());
        assert!(arena.path().exists(), "this process is alive");
        let _second = Arena::create(dir.path(), 1, PAGE).unwrap();
        assert!(arena.path().exists());
    }
}
