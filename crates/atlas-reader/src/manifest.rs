//! The bytes of a growing collection's manifest, `collection.manifest`
//! (`docs/format/growing.md`): a header line, then one line per commit, oldest first.
//!
//! ```text
//! atlas-growing 1
//! <version> <created_unix_ms> <datasets> <part>
//! ```
//!
//! Version `N` of the collection is the parts of commits `1..=N`, so the one object both names
//! the latest version and keeps every older one: an open reads it in one request.

use std::fmt::Write as _;

/// The manifest object's name, beside where a plain collection's `data.atlas` would be.
pub const MANIFEST_OBJECT: &str = "collection.manifest";
/// The directory (prefix) under the collection that holds its parts.
pub const PARTS_DIR: &str = "parts";
/// The first line of every manifest of this version.
const HEADER: &str = "atlas-growing 1";
/// The longest part id a manifest may name.
const MAX_PART_ID: usize = 64;
/// The largest manifest a reader accepts (a reader bound, not a format rule): about a million
/// commits.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024 * 1024;

/// One commit: the part it added.
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
}

impl Commit {
    /// The part's prefix relative to the collection: `parts/<id>`.
    pub fn part_prefix(&self) -> String {
        format!("{PARTS_DIR}/{}", self.part)
    }
}

/// A growing collection's manifest: every commit, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Commit `i` made version `i + 1`.
    pub commits: Vec<Commit>,
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

    /// The commits whose parts make version `version` (none past the latest): commits
    /// `1..=version`, since every commit of this manifest version adds a part. What `gc` keeps
    /// for a kept version; a later line kind that replaces the part list (compaction) changes
    /// this fold, not its callers.
    pub fn parts_of(&self, version: u64) -> &[Commit] {
        let end = usize::try_from(version)
            .unwrap_or(usize::MAX)
            .min(self.commits.len());
        &self.commits[..end]
    }

    /// A manifest with one more commit, making version `latest() + 1`.
    pub fn with_commit(&self, created_unix_ms: i64, datasets: u64, part: &str) -> Self {
        let mut next = self.clone();
        next.commits.push(Commit {
            version: self.latest() + 1,
            created_unix_ms,
            datasets,
            part: part.to_owned(),
        });
        next
    }

    /// The manifest's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(16 + self.commits.len() * 64);
        out.push_str(HEADER);
        out.push('\n');
        for c in &self.commits {
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "{} {} {} {}",
                c.version, c.created_unix_ms, c.datasets, c.part
            );
        }
        out.into_bytes()
    }

    /// Parses manifest bytes strictly: the header, then lines of four fields separated by one
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
        if header != HEADER {
            return Err(ManifestError {
                line: 1,
                reason: format!("expected the header {HEADER:?}, found {header:?}"),
            });
        }
        let mut commits = Vec::new();
        let mut parts = std::collections::HashSet::new();
        for (index, line) in lines.enumerate() {
            let number = index + 2;
            let bad = |reason: String| ManifestError {
                line: number,
                reason,
            };
            let fields: Vec<&str> = line.split(' ').collect();
            let [version, created, datasets, part] = fields.as_slice() else {
                return Err(bad(format!(
                    "expected 4 fields separated by one space, found {}",
                    fields.len()
                )));
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
            });
        }
        Ok(Self { commits })
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
