//! The bytes of a growing collection's manifest, `collection.manifest`
//! (`docs/format/growing.md`): a header line, then one line per commit, oldest first.
//!
//! ```text
//! atlas-growing 1                       (atlas-growing 2 <oldest readable version>)
//! <version> <created_unix_ms> <datasets> <part>            an append: adds its part
//! <version> <created_unix_ms> <datasets> <part> compact    a compaction: its part replaces all
//! ```
//!
//! The parts of version `N` fold commits `1..=N` ([`Manifest::parts_of`]), so the one object
//! both names the latest version and keeps every older one: an open reads it in one request.
//! A manifest with only append lines and every version readable keeps the version 1 bytes, so
//! readers that predate compaction read every collection that has not been compacted.

use std::fmt::Write as _;

/// The manifest object's name, beside where a plain collection's `data.atlas` would be.
pub const MANIFEST_OBJECT: &str = "collection.manifest";
/// The directory (prefix) under the collection that holds its parts.
pub const PARTS_DIR: &str = "parts";
/// The first line of a manifest of append lines only, every version readable.
const HEADER: &str = "atlas-growing 1";
/// The first line of any other manifest, before its oldest readable version.
const HEADER_2: &str = "atlas-growing 2 ";
/// The fifth field of a compact line.
const COMPACT_FIELD: &str = "compact";
/// The longest part id a manifest may name.
const MAX_PART_ID: usize = 64;
/// The largest manifest a reader accepts (a reader bound, not a format rule): about a million
/// commits.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024 * 1024;

/// What a commit did to the part list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitKind {
    /// Added its part after the parts before it.
    Append,
    /// Replaced every part before it by its part (a compaction).
    Compact,
}

impl CommitKind {
    /// How `atlas log` and reports name it: `append` or `compact`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Append => "append",
            Self::Compact => "compact",
        }
    }
}

/// One commit: the part it added, and whether that part replaced the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The collection version this commit made: its line number, from 1.
    pub version: u64,
    /// When the appender made it (milliseconds since the Unix epoch, the appender's clock).
    pub created_unix_ms: i64,
    /// Datasets the part holds.
    pub datasets: u64,
    /// The part's id: its prefix is `parts/<id>` under the collection.
    pub part: String,
    /// Whether the part was added or replaced the list.
    pub kind: CommitKind,
}

impl Commit {
    /// The part's prefix relative to the collection: `parts/<id>`.
    pub fn part_prefix(&self) -> String {
        format!("{PARTS_DIR}/{}", self.part)
    }
}

/// A growing collection's manifest: every commit, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Commit `i` made version `i + 1`.
    pub commits: Vec<Commit>,
    /// The oldest version still readable: 1 unless a `gc` removed parts older versions name.
    pub oldest_readable: u64,
}

impl Default for Manifest {
    fn default() -> Self {
        Self {
            commits: Vec::new(),
            oldest_readable: 1,
        }
    }
}

/// Why manifest bytes were refused: the line (1-based) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// The line at fault (1 is the header); 0 for the whole object.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// Whether `id` may name a part: 1 to 64 of `[0-9a-z_-]`, so that `parts/<id>` is one path
/// segment on every store and file system and can never climb out of the collection.
pub fn is_valid_part_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_PART_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-' || b == b'_')
}

impl Manifest {
    /// The latest version: the number of commits (0 for a manifest that has none).
    pub fn latest(&self) -> u64 {
        self.commits.len() as u64
    }

    /// The commits that made version `version` (none past the latest): commits
    /// `1..=version`, what `atlas log` lists for it.
    pub fn history(&self, version: u64) -> &[Commit] {
        &self.commits[..self.end(version)]
    }

    /// The commits whose parts make version `version` (none past the latest), oldest first:
    /// the last compact line at or before it and the appends after it (commits `1..=version`
    /// where there is no compact line). What an open reads and `gc` keeps for a kept version.
    pub fn parts_of(&self, version: u64) -> &[Commit] {
        let upto = self.history(version);
        let start = upto
            .iter()
            .rposition(|c| c.kind == CommitKind::Compact)
            .unwrap_or(0);
        &upto[start..]
    }

    fn end(&self, version: u64) -> usize {
        usize::try_from(version)
            .unwrap_or(usize::MAX)
            .min(self.commits.len())
    }

    /// A manifest with one more append commit, making version `latest() + 1`.
    pub fn with_commit(&self, created_unix_ms: i64, datasets: u64, part: &str) -> Self {
        self.with(CommitKind::Append, created_unix_ms, datasets, part)
    }

    /// A manifest with one more compact commit, making version `latest() + 1` of `part` alone.
    pub fn with_compaction(&self, created_unix_ms: i64, datasets: u64, part: &str) -> Self {
        self.with(CommitKind::Compact, created_unix_ms, datasets, part)
    }

    fn with(&self, kind: CommitKind, created_unix_ms: i64, datasets: u64, part: &str) -> Self {
        let mut next = self.clone();
        next.commits.push(Commit {
            version: self.latest() + 1,
            created_unix_ms,
            datasets,
            part: part.to_owned(),
            kind,
        });
        next
    }

    /// Whether the bytes need manifest version 2: a compact line, or versions gc made
    /// unreadable. Otherwise they are exactly version 1's, which older readers read.
    fn needs_version_2(&self) -> bool {
        self.oldest_readable > 1 || self.commits.iter().any(|c| c.kind == CommitKind::Compact)
    }

    /// The manifest's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(16 + self.commits.len() * 64);
        // Writing to a String cannot fail.
        if self.needs_version_2() {
            let _ = writeln!(out, "{HEADER_2}{}", self.oldest_readable);
        } else {
            let _ = writeln!(out, "{HEADER}");
        }
        for c in &self.commits {
            let _ = write!(
                out,
                "{} {} {} {}",
                c.version, c.created_unix_ms, c.datasets, c.part
            );
            if c.kind == CommitKind::Compact {
                let _ = write!(out, " {COMPACT_FIELD}");
            }
            out.push('\n');
        }
        out.into_bytes()
    }

    /// Parses manifest bytes strictly: the header (version 2 only where version 1 cannot say
    /// it: a compact line, or an oldest readable version above 1, at most the latest), then
    /// lines of four fields (five for a compact line, the fifth `compact`) separated by one
    /// space, versions counting up from 1, valid and distinct part ids, every line (the last
    /// included) ended by `\n`, nothing else.
    pub fn decode(bytes: &[u8]) -> Result<Self, ManifestError> {
        let whole = |reason: String| ManifestError { line: 0, reason };
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(whole(format!(
                "{} bytes, more than the {MAX_MANIFEST_BYTES} a reader accepts",
                bytes.len()
            )));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| whole(format!("not UTF-8 text: {e}")))?;
        let Some(body) = text.strip_suffix('\n') else {
            return Err(whole("does not end with a newline".to_owned()));
        };
        let mut lines = body.split('\n');
        let header = lines.next().unwrap_or_default();
        let header_error = |reason: String| ManifestError { line: 1, reason };
        let oldest_readable = if header == HEADER {
            None
        } else if let Some(oldest) = header.strip_prefix(HEADER_2) {
            let oldest: u64 =
                parse_field(oldest, "oldest readable version").map_err(header_error)?;
            Some(oldest)
        } else {
            return Err(header_error(format!(
                "expected the header {HEADER:?} or \"{HEADER_2}<oldest readable version>\", found {header:?}"
            )));
        };
        let mut commits = Vec::new();
        let mut parts = std::collections::HashSet::new();
        for (index, line) in lines.enumerate() {
            let number = index + 2;
            let bad = |reason: String| ManifestError {
                line: number,
                reason,
            };
            let fields: Vec<&str> = line.split(' ').collect();
            let (version, created, datasets, part, kind) = match fields.as_slice() {
                [version, created, datasets, part] => {
                    (version, created, datasets, part, CommitKind::Append)
                }
                [version, created, datasets, part, kind] if *kind == COMPACT_FIELD => {
                    if oldest_readable.is_none() {
                        return Err(bad(format!(
                            "a compact line in a manifest whose header is {HEADER:?}"
                        )));
                    }
                    (version, created, datasets, part, CommitKind::Compact)
                }
                [.., kind] if fields.len() == 5 => {
                    return Err(bad(format!(
                        "the fifth field is {kind:?}; the only one is {COMPACT_FIELD:?}"
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "expected 4 fields (5 for a compact line) separated by one space, found {}",
                        fields.len()
                    )))
                }
            };
            let version: u64 = parse_field(version, "version").map_err(bad)?;
            let expected = index as u64 + 1;
            if version != expected {
                return Err(bad(format!("version {version}, expected {expected}")));
            }
            let created_unix_ms: i64 = parse_field(created, "created_unix_ms").map_err(bad)?;
            let datasets: u64 = parse_field(datasets, "datasets").map_err(bad)?;
            if !is_valid_part_id(part) {
                return Err(bad(format!(
                    "part id {part:?} is not 1 to {MAX_PART_ID} of [0-9a-z_-]"
                )));
            }
            if !parts.insert(*part) {
                return Err(bad(format!("part id {part:?} is named twice")));
            }
            commits.push(Commit {
                version,
                created_unix_ms,
                datasets,
                part: (*part).to_owned(),
                kind,
            });
        }
        let manifest = Self {
            commits,
            oldest_readable: oldest_readable.unwrap_or(1),
        };
        if oldest_readable.is_some() {
            let oldest = manifest.oldest_readable;
            if oldest == 0 || oldest > manifest.latest().max(1) {
                return Err(header_error(format!(
                    "oldest readable version {oldest} is not one of the versions 1 to {}",
                    manifest.latest().max(1)
                )));
            }
            if !manifest.needs_version_2() {
                return Err(header_error(
                    "a version 2 header on a manifest version 1 spells (no compact line, every version readable)"
                        .to_owned(),
                ));
            }
        }
        Ok(manifest)
    }
}

/// A decimal field: ASCII digits (with a leading `-` for a signed one), no sign `+`, no
/// leading zero but in `0` itself, so that every value has one spelling.
fn parse_field<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    match (canonical, text.parse::<T>()) {
        (true, Ok(value)) => Ok(value),
        _ => Err(format!(
            "{name} {text:?} is not a canonical decimal integer"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_pinned() {
        let manifest = Manifest::default()
            .with_commit(1_700_000_000_000, 50, "0123abcd")
            .with_commit(-5, 0, "x_y-z");
        assert_eq!(
            manifest.encode(),
            b"atlas-growing 1\n1 1700000000000 50 0123abcd\n2 -5 0 x_y-z\n"
        );
        assert_eq!(Manifest::decode(&manifest.encode()).unwrap(), manifest);
        assert_eq!(manifest.latest(), 2);
        assert_eq!(manifest.commits[0].part_prefix(), "parts/0123abcd");
    }

    #[test]
    fn a_compact_line_needs_version_2_and_replaces_the_part_list() {
        let manifest = Manifest::default()
            .with_commit(10, 2, "a")
            .with_commit(11, 3, "b")
            .with_compaction(12, 4, "c")
            .with_commit(13, 1, "d");
        let bytes = b"atlas-growing 2 1\n1 10 2 a\n2 11 3 b\n3 12 4 c compact\n4 13 1 d\n";
        assert_eq!(manifest.encode(), bytes);
        assert_eq!(Manifest::decode(bytes).unwrap(), manifest);
        let parts = |v| -> Vec<&str> {
            manifest
                .parts_of(v)
                .iter()
                .map(|c| c.part.as_str())
                .collect()
        };
        assert_eq!(parts(2), ["a", "b"]);
        assert_eq!(parts(3), ["c"]);
        assert_eq!(parts(4), ["c", "d"]);
        assert_eq!(parts(99), ["c", "d"]);
        assert_eq!(manifest.history(3).len(), 3);
        assert_eq!(manifest.commits[2].kind.as_str(), "compact");

        let collected = Manifest {
            oldest_readable: 3,
            ..manifest
        };
        let bytes = b"atlas-growing 2 3\n1 10 2 a\n2 11 3 b\n3 12 4 c compact\n4 13 1 d\n";
        assert_eq!(collected.encode(), bytes);
        assert_eq!(Manifest::decode(bytes).unwrap(), collected);
    }

    #[test]
    fn an_oldest_readable_version_alone_needs_version_2() {
        let manifest = Manifest {
            oldest_readable: 2,
            ..Manifest::default()
                .with_commit(1, 1, "a")
                .with_commit(2, 1, "b")
        };
        let bytes = b"atlas-growing 2 2\n1 1 1 a\n2 2 1 b\n";
        assert_eq!(manifest.encode(), bytes);
        assert_eq!(Manifest::decode(bytes).unwrap(), manifest);
    }

    #[test]
    fn damaged_version_2_manifests_are_refused_naming_the_line() {
        let cases: [(&[u8], usize); 9] = [
            // A compact line under the version 1 header.
            (b"atlas-growing 1\n1 0 1 a\n2 0 1 b compact\n", 3),
            // A fifth field that is not `compact`.
            (
                b"atlas-growing 2 1\n1 0 1 a compact\n2 0 1 b compacted\n",
                3,
            ),
            (b"atlas-growing 2 1\n1 0 1 a compact \n", 2),
            (b"atlas-growing 2 1\n1 0 1 a compact x\n", 2),
            // The oldest readable version: not canonical, 0, past the latest, absent.
            (b"atlas-growing 2 01\n1 0 1 a compact\n", 1),
            (b"atlas-growing 2 0\n1 0 1 a compact\n", 1),
            (b"atlas-growing 2 3\n1 0 1 a compact\n", 1),
            (b"atlas-growing 2 \n1 0 1 a compact\n", 1),
            // Version 2 where version 1 says it.
            (b"atlas-growing 2 1\n1 0 1 a\n", 1),
        ];
        for (bytes, line) in cases {
            let error = Manifest::decode(bytes).unwrap_err();
            assert_eq!(
                error.line,
                line,
                "{:?}: {error}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn damaged_manifests_are_refused_naming_the_line() {
        let cases: [(&[u8], usize); 11] = [
            (b"atlas-growing 1", 0),
            (b"atlas-growing 2\n", 1),
            (b"atlas-growing 1\n2 0 1 a\n", 2),
            (b"atlas-growing 1\n1 0 1 a\n1 0 1 b\n", 3),
            (b"atlas-growing 1\n1 0 1 a\n2 0 1 a\n", 3),
            (b"atlas-growing 1\n1 0 1 ../x\n", 2),
            (b"atlas-growing 1\n1 0 1 A\n", 2),
            (b"atlas-growing 1\n1  0 1 a\n", 2),
            (b"atlas-growing 1\n01 0 1 a\n", 2),
            (b"atlas-growing 1\n1 0 +1 a\n", 2),
            (b"atlas-growing 1\n\xff\n", 0),
        ];
        for (bytes, line) in cases {
            let error = Manifest::decode(bytes).unwrap_err();
            assert_eq!(
                error.line,
                line,
                "{:?}: {error}",
                String::from_utf8_lossy(bytes)
            );
        }
        assert_eq!(Manifest::decode(b"atlas-growing 1\n").unwrap().latest(), 0);
    }
}
