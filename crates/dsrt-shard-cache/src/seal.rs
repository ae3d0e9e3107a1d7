//! Seals: the cache's record that it wrote a final file, and the marker that makes a directory
//! the cache's own.
//!
//! A final file counts as the cache's only when the seal beside it
//! (`.shard-cache-seal.<name>`) names its inode and length: a file someone else placed at a
//! cache name (a copy, a half-written file, another program's output) has no seal, or one
//! naming another inode, and is never served, counted or removed. The seal also carries the
//! SHA-256 the file was checked against when it entered the cache.

use crate::rel::MARKER;
use dsrt_atlas_codec::to_hex as hex;
use durable_fs::{Dir, FileAccess};
use std::io::{self, Read};

/// The most bytes read of a seal or marker: anything longer is not one.
const MAX_RECORD_BYTES: u64 = 512;

/// A final file's seal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seal {
    /// The SHA-256 the file was checked against.
    pub(crate) sha256: [u8; 32],
    /// Its length.
    pub(crate) len: u64,
    /// Its inode: a file put in its place later has another.
    pub(crate) ino: u64,
}

impl Seal {
    /// The bytes on disk: `sha256 <hex>\nlen <decimal>\nino <decimal>\n`.
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        format!(
            "sha256 {}\nlen {}\nino {}\n",
            hex(&self.sha256),
            self.len,
            self.ino
        )
        .into_bytes()
    }

    /// Parses a seal's bytes; `None` for anything that is not exactly one.
    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.strip_suffix('\n')?.split('\n');
        let sha_hex = lines.next()?.strip_prefix("sha256 ")?;
        let len = lines.next()?.strip_prefix("len ")?;
        let ino = lines.next()?.strip_prefix("ino ")?;
        if lines.next().is_some() {
            return None;
        }
        let sha256 = dsrt_atlas_codec::parse_sha256_hex(sha_hex)?;
        Some(Self {
            sha256,
            len: decimal(len)?,
            ino: decimal(ino)?,
        })
    }

    /// The seal `name` in `dir`, or `None` when there is none or it is not a seal.
    pub(crate) fn read(dir: &Dir, name: &str) -> io::Result<Option<Self>> {
        Ok(read_small(dir, name)?.and_then(|bytes| Self::parse(&bytes)))
    }

    /// Whether this seal vouches for a file of inode `ino` and length `len`.
    pub(crate) fn names(&self, ino: u64, len: u64) -> bool {
        self.ino == ino && self.len == len
    }
}

/// A decimal without sign, leading zeros or spaces.
fn decimal(text: &str) -> Option<u64> {
    if text.is_empty() || (text.len() > 1 && text.starts_with('0')) {
        return None;
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The bytes of a small regular file `name` of `dir`; `None` when absent, not a regular file,
/// or longer than a record can be.
fn read_small(dir: &Dir, name: &str) -> io::Result<Option<Vec<u8>>> {
    let file = match dir.open_file(name, FileAccess::Read) {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::InvalidInput
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_RECORD_BYTES).then_some(bytes))
}

/// Who may use a shard cache directory: its owner alone, or the members of its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Directories `0700`, files `0600`: only the user who made it. The root must belong to
    /// that user and be writable by nobody else.
    #[default]
    Private,
    /// Directories `2770` (new entries keep the directory's group), files `0640`: the members
    /// of the root's group share one cache. The root must not be writable by others.
    Group,
}

impl Access {
    pub(crate) fn file_mode(self) -> u32 {
        match self {
            Self::Private => 0o600,
            Self::Group => 0o640,
        }
    }

    pub(crate) fn dir_mode(self) -> u32 {
        match self {
            Self::Private => 0o700,
            Self::Group => 0o2770,
        }
    }

    /// The access's name: `"private"` or `"group"` (what Python's `cache_access` takes).
    pub fn name(self) -> &'static str {
        match self {
            Self::Private => "private",
            Self::Group => "group",
        }
    }

    /// The access a name means; `None` for any but `"private"` and `"group"`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Private, Self::Group]
            .into_iter()
            .find(|access| access.name() == name)
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The marker's bytes for a cache of `access`.
pub(crate) fn marker_bytes(access: Access) -> Vec<u8> {
    format!("dsrt-shard-cache\nprotocol 2\naccess {access}\n").into_bytes()
}

/// What the root's marker says.
pub(crate) enum Marker {
    /// No marker: not (yet) a shard cache.
    Absent,
    /// A shard cache of this protocol, with its access.
    Cache(Access),
    /// Something else at the marker's name (another protocol version, or not a marker).
    Unreadable(String),
}

/// Reads the marker of the root `dir`.
pub(crate) fn read_marker(dir: &Dir) -> io::Result<Marker> {
    let Some(bytes) = read_small(dir, MARKER)? else {
        return Ok(match dir.stat(MARKER)? {
            None => Marker::Absent,
            Some(_) => Marker::Unreadable(format!("{MARKER} is not a marker file")),
        });
    };
    for access in [Access::Private, Access::Group] {
        if bytes == marker_bytes(access) {
            return Ok(Marker::Cache(access));
        }
    }
    let first = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned();
    Ok(Marker::Unreadable(format!(
        "{MARKER} is not a marker of protocol 2 (it begins {first:?})"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_access_is_named_by_its_word() {
        for access in [Access::Private, Access::Group] {
            assert_eq!(Access::from_name(access.name()), Some(access));
            assert_eq!(access.to_string(), access.name());
        }
        assert_eq!(Access::from_name("world"), None);
    }

    #[test]
    fn a_seal_round_trips_and_its_bytes_are_pinned() {
        let seal = Seal {
            sha256: [0xab; 32],
            len: 1234,
            ino: 42,
        };
        let bytes = seal.to_bytes();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            format!("sha256 {}\nlen 1234\nino 42\n", "ab".repeat(32))
        );
        assert_eq!(Seal::parse(&bytes), Some(seal));
        assert!(seal.names(42, 1234));
        assert!(!seal.names(43, 1234));
        assert!(!seal.names(42, 1235));
    }

    #[test]
    fn near_seals_are_not_seals() {
        let good = format!("sha256 {}\nlen 5\nino 7\n", "0".repeat(64));
        assert!(Seal::parse(good.as_bytes()).is_some());
        for bad in [
            good.trim_end().to_owned(),
            good.replace("len 5", "len 05"),
            good.replace("len 5", "len -5"),
            good.replace("len 5", "len  5"),
            good.replace("ino 7\n", "ino 7\nextra\n"),
            good.replace(&"0".repeat(64), &"A".repeat(64)),
            good.replace(&"0".repeat(64), &"0".repeat(63)),
            String::new(),
        ] {
            assert_eq!(Seal::parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn any_seal_round_trips(sha in any::<[u8; 32]>(), len in any::<u64>(), ino in any::<u64>()) {
            let seal = Seal { sha256: sha, len, ino };
            prop_assert_eq!(Seal::parse(&seal.to_bytes()), Some(seal));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Seal::parse(&bytes);
        }
    }
}
