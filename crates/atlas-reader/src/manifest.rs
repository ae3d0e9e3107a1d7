//! The bytes of a growing collection's manifest, `collection.manifest`
//! (`docs/format/growing.md`): a header line, then one line per commit, oldest first.
//!
//! ```text
//! atlas-growing 1                       (atlas-growing 2|3 <oldest readable version>)
//! <version> <created_unix_ms> <datasets> <part>            an append: adds its part
//! <version> <created_unix_ms> <datasets> <part> compact    a compaction: its part replaces all
//! <version> <created_unix_ms> <datasets> <part> replace <part>:<ordinal>,...
//!                                          an append that also hides datasets of earlier parts
//! ```
//!
//! The parts of version `N` fold commits `1..=N` ([`Manifest::parts_of`]), so the one object
//! both names the latest version and keeps every older one: an open reads it in one request.
//! A manifest with only append lines and every version readable keeps the version 1 bytes, so
//! readers that predate compaction read every collection that has not been compacted; one
//! without a replace line keeps the version 2 bytes, so readers that predate replacing read it.

use std::fmt::Write as _;

/// The manifest object's name, beside where a plain collection's `data.atlas` would be.
pub const MANIFEST_OBJECT: &str = "collection.manifest";
/// The directory (prefix) under the collection that holds its parts.
pub const PARTS_DIR: &str = "parts";
/// The first line of a manifest of append lines only, every version readable.
const HEADER: &str = "atlas-growing 1";
/// The first line of a manifest with a compact line or unreadable versions and no replace
/// line, before its oldest readable version.
const HEADER_2: &str = "atlas-growing 2 ";
/// The first line of a manifest with a replace line, before its oldest readable version.
const HEADER_3: &str = "atlas-growing 3 ";
/// The fifth field of a compact line.
const COMPACT_FIELD: &str = "compact";
/// The fifth field of a replace line; the sixth lists the datasets it hides.
const REPLACE_FIELD: &str = "replace";
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

/// A dataset a replace line hides: the part that holds it and its ordinal within that part.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HiddenDataset {
    /// The part's id (a part of the same version, committed before the replace line).
    pub part: String,
    /// The dataset's ordinal within the part (its position in the part's footer).
    pub ordinal: u32,
}

/// One commit: the part it added, whether that part replaced the others, and the datasets of
/// earlier parts it hid.
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
    /// For an append that replaced datasets (a replace line): the datasets of earlier parts
    /// it hid, sorted, none twice. Empty for any other commit.
    pub hides: Vec<HiddenDataset>,
}

impl Commit {
    /// The part's prefix relative to the collection: `parts/<id>`.
    pub fn part_prefix(&self) -> String {
        format!("{PARTS_DIR}/{}", self.part)
    }

    /// How `atlas log` names the commit: `compact`, `replace` (an append that hid datasets)
    /// or `append`.
    pub fn label(&self) -> &'static str {
        match self.kind {
            CommitKind::Append if !self.hides.is_empty() => "replace",
            kind => kind.as_str(),
        }
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

    /// The datasets version `version` hides (none past the latest): the hides of the replace
    /// lines among [`Manifest::parts_of`], each naming one of those parts. A compaction copies
    /// only live datasets, so the hides before it end with it.
    pub fn hidden_of(&self, version: u64) -> impl Iterator<Item = (&Commit, &HiddenDataset)> {
        self.parts_of(version)
            .iter()
            .flat_map(|commit| commit.hides.iter().map(move |hidden| (commit, hidden)))
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

    /// A manifest with one more append commit that also hides `hides` (datasets of the latest
    /// version's parts; sorted and deduplicated here), making version `latest() + 1`. With no
    /// hides it is [`Manifest::with_commit`].
    pub fn with_replace(
        &self,
        created_unix_ms: i64,
        datasets: u64,
        part: &str,
        mut hides: Vec<HiddenDataset>,
    ) -> Self {
        hides.sort();
        hides.dedup();
        let mut next = self.with(CommitKind::Append, created_unix_ms, datasets, part);
        if let Some(commit) = next.commits.last_mut() {
            commit.hides = hides;
        }
        next
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
            hides: Vec::new(),
        });
        next
    }

    /// The header version the bytes need: 3 with a replace line; else 2 with a compact line
    /// or versions gc made unreadable; else 1. Each is written only where the one before it
    /// cannot say the manifest, so readers that predate a line kind read every manifest
    /// without it.
    fn header_version(&self) -> u8 {
        if self.commits.iter().any(|c| !c.hides.is_empty()) {
            3
        } else if self.oldest_readable > 1
            || self.commits.iter().any(|c| c.kind == CommitKind::Compact)
        {
            2
        } else {
            1
        }
    }

    /// The manifest's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(16 + self.commits.len() * 64);
        // Writing to a String cannot fail.
        match self.header_version() {
            1 => {
                let _ = writeln!(out, "{HEADER}");
            }
            2 => {
                let _ = writeln!(out, "{HEADER_2}{}", self.oldest_readable);
            }
            _ => {
                let _ = writeln!(out, "{HEADER_3}{}", self.oldest_readable);
            }
        }
        for c in &self.commits {
            let _ = write!(
                out,
                "{} {} {} {}",
                c.version, c.created_unix_ms, c.datasets, c.part
            );
            if c.kind == CommitKind::Compact {
                let _ = write!(out, " {COMPACT_FIELD}");
            } else if !c.hides.is_empty() {
                let _ = write!(out, " {REPLACE_FIELD} ");
                for (i, hidden) in c.hides.iter().enumerate() {
                    let comma = if i == 0 { "" } else { "," };
                    let _ = write!(out, "{comma}{}:{}", hidden.part, hidden.ordinal);
                }
            }
            out.push('\n');
        }
        out.into_bytes()
    }

    /// Parses manifest bytes strictly: the header (version 2 only where version 1 cannot say
    /// it: a compact line, or an oldest readable version above 1, at most the latest; version
    /// 3 exactly where there is a replace line), then lines of four fields (five for a compact
    /// line, the fifth `compact`; six for a replace line, the fifth `replace`) separated by one
    /// space, versions counting up from 1, valid and distinct part ids, every line (the last
    /// included) ended by `\n`, nothing else. A replace line's hides name parts its version
    /// reads, committed before it, in ascending order, none hidden before.
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
        let (header_version, oldest_readable) = if header == HEADER {
            (1, None)
        } else if let Some(oldest) = header.strip_prefix(HEADER_2) {
            let oldest: u64 =
                parse_field(oldest, "oldest readable version").map_err(header_error)?;
            (2, Some(oldest))
        } else if let Some(oldest) = header.strip_prefix(HEADER_3) {
            let oldest: u64 =
                parse_field(oldest, "oldest readable version").map_err(header_error)?;
            (3, Some(oldest))
        } else {
            return Err(header_error(format!(
                "expected the header {HEADER:?}, \"{HEADER_2}<oldest readable version>\" or \"{HEADER_3}<oldest readable version>\", found {header:?}"
            )));
        };
        let mut commits = Vec::new();
        let mut parts = std::collections::HashSet::new();
        // The parts since the last compact line, with the ordinals hidden in each: what a
        // replace line may hide.
        let mut live: std::collections::HashMap<&str, std::collections::HashSet<u32>> =
            std::collections::HashMap::new();
        for (index, line) in lines.enumerate() {
            let number = index + 2;
            let bad = |reason: String| ManifestError {
                line: number,
                reason,
            };
            let fields: Vec<&str> = line.split(' ').collect();
            let (version, created, datasets, part, kind, hides) = match fields.as_slice() {
                [version, created, datasets, part] => {
                    (version, created, datasets, part, CommitKind::Append, None)
                }
                [version, created, datasets, part, kind] if *kind == COMPACT_FIELD => {
                    if header_version == 1 {
                        return Err(bad(format!(
                            "a compact line in a manifest whose header is {HEADER:?}"
                        )));
                    }
                    (version, created, datasets, part, CommitKind::Compact, None)
                }
                [version, created, datasets, part, kind, hides] if *kind == REPLACE_FIELD => {
                    if header_version != 3 {
                        return Err(bad(format!(
                            "a replace line in a manifest whose header is {header:?}, not \"{HEADER_3}<oldest readable version>\""
                        )));
                    }
                    (
                        version,
                        created,
                        datasets,
                        part,
                        CommitKind::Append,
                        Some(*hides),
                    )
                }
                [.., kind] if fields.len() == 5 => {
                    return Err(bad(format!(
                        "the fifth field is {kind:?}; the only one of a 5-field line is {COMPACT_FIELD:?}"
                    )));
                }
                [_, _, _, _, kind, _] => {
                    return Err(bad(format!(
                        "the fifth field is {kind:?}; the only one of a 6-field line is {REPLACE_FIELD:?}"
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "expected 4 fields (5 for a compact line, 6 for a replace line) separated by one space, found {}",
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
            let hides = match hides {
                Some(list) => parse_hides(list, &mut live).map_err(bad)?,
                None => Vec::new(),
            };
            if kind == CommitKind::Compact {
                live.clear();
            }
            live.insert(part, std::collections::HashSet::new());
            commits.push(Commit {
                version,
                created_unix_ms,
                datasets,
                part: (*part).to_owned(),
                kind,
                hides,
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
        }
        let needed = manifest.header_version();
        if header_version != needed {
            return Err(header_error(match needed {
                1 => "a version 2 or 3 header on a manifest version 1 spells (no compact or replace line, every version readable)".to_owned(),
                _ => "a version 3 header on a manifest version 2 spells (no replace line)".to_owned(),
            }));
        }
        Ok(manifest)
    }
}

/// Parses a replace line's hides, `<part>:<ordinal>` joined by `,`: each part one of `live`
/// (the parts since the last compaction, before this line), ascending by part id then
/// ordinal, none repeated nor hidden by an earlier line (`live` records them).
fn parse_hides<'t>(
    list: &'t str,
    live: &mut std::collections::HashMap<&'t str, std::collections::HashSet<u32>>,
) -> Result<Vec<HiddenDataset>, String> {
    let mut hides: Vec<HiddenDataset> = Vec::new();
    for item in list.split(',') {
        let Some((part, ordinal)) = item.split_once(':') else {
            return Err(format!(
                "hidden dataset {item:?} is not <part id>:<ordinal>"
            ));
        };
        let ordinal: u32 = parse_field(ordinal, "hidden ordinal")?;
        let Some(hidden_before) = live.get_mut(part) else {
            return Err(format!(
                "hidden dataset {item:?} names no part of its version before this line"
            ));
        };
        let hidden = HiddenDataset {
            part: part.to_owned(),
            ordinal,
        };
        if hides.last().is_some_and(|last| *last >= hidden) {
            return Err(format!(
                "hidden dataset {item:?} is out of order or repeated (ascending by part id, then ordinal)"
            ));
        }
        if !hidden_before.insert(ordinal) {
            return Err(format!(
                "hidden dataset {item:?} is hidden by an earlier line"
            ));
        }
        hides.push(hidden);
    }
    Ok(hides)
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
    fn a_replace_line_needs_version_3_and_hides_datasets_of_its_version() {
        let hide = |part: &str, ordinal| HiddenDataset {
            part: part.to_owned(),
            ordinal,
        };
        let manifest = Manifest::default()
            .with_commit(10, 3, "a")
            .with_commit(11, 2, "b")
            .with_replace(12, 2, "c", vec![hide("b", 1), hide("a", 2), hide("a", 0)])
            .with_compaction(13, 4, "d")
            .with_replace(14, 1, "e", vec![hide("d", 3)])
            .with_replace(15, 1, "f", Vec::new());
        let bytes = b"atlas-growing 3 1\n1 10 3 a\n2 11 2 b\n3 12 2 c replace a:0,a:2,b:1\n\
                      4 13 4 d compact\n5 14 1 e replace d:3\n6 15 1 f\n";
        assert_eq!(
            String::from_utf8_lossy(&manifest.encode()),
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(Manifest::decode(bytes).unwrap(), manifest);
        let hidden = |v| -> Vec<(u64, String, u32)> {
            manifest
                .hidden_of(v)
                .map(|(c, h)| (c.version, h.part.clone(), h.ordinal))
                .collect()
        };
        assert!(hidden(2).is_empty());
        assert_eq!(
            hidden(3),
            [
                (3, "a".to_owned(), 0),
                (3, "a".to_owned(), 2),
                (3, "b".to_owned(), 1)
            ]
        );
        // The compaction copied only live datasets: the hides before it end with it.
        assert!(hidden(4).is_empty());
        assert_eq!(hidden(6), [(5, "d".to_owned(), 3)]);
        assert_eq!(manifest.commits[2].label(), "replace");
        assert_eq!(manifest.commits[3].label(), "compact");
        assert_eq!(manifest.commits[5].label(), "append");

        // Gc raising the oldest readable version keeps the version 3 header.
        let collected = Manifest {
            oldest_readable: 4,
            ..manifest
        };
        let encoded = collected.encode();
        assert!(encoded.starts_with(b"atlas-growing 3 4\n"));
        assert_eq!(Manifest::decode(&encoded).unwrap(), collected);
    }

    #[test]
    fn damaged_replace_lines_are_refused_naming_the_line() {
        let cases: [(&[u8], usize); 16] = [
            // A replace line under a version 1 or 2 header.
            (b"atlas-growing 1\n1 0 1 a\n2 0 1 b replace a:0\n", 3),
            (b"atlas-growing 2 1\n1 0 1 a\n2 0 1 b replace a:0\n", 3),
            // A version 3 header without a replace line.
            (b"atlas-growing 3 1\n1 0 1 a\n", 1),
            (b"atlas-growing 3 1\n1 0 1 a compact\n", 1),
            (b"atlas-growing 3 0\n1 0 1 a\n2 0 1 b replace a:0\n", 1),
            // A sixth field with another fifth, or no hides.
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replaces a:0\n", 3),
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace \n", 3),
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace\n", 3),
            // Not <part>:<ordinal>, or an ordinal that is not canonical.
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace a\n", 3),
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace a:01\n", 3),
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace a:-1\n", 3),
            // A part that is not an earlier part of the version: itself, unknown, compacted.
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace b:0\n", 3),
            (b"atlas-growing 3 1\n1 0 1 a\n2 0 1 b replace z:0\n", 3),
            (
                b"atlas-growing 3 1\n1 0 1 a\n2 0 1 c compact\n3 0 1 b replace a:0\n",
                4,
            ),
            // Out of order, repeated, or hidden by an earlier line.
            (b"atlas-growing 3 1\n1 0 2 a\n2 0 1 b replace a:1,a:0\n", 3),
            (
                b"atlas-growing 3 1\n1 0 2 a\n2 0 1 b replace a:1\n3 0 1 c replace a:1\n",
                4,
            ),
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
        assert!(Manifest::decode(b"atlas-growing 3 1\n1 0 2 a\n2 0 1 b replace a:0,a:1\n").is_ok());
        assert!(
            Manifest::decode(b"atlas-growing 3 1\n1 0 2 a\n2 0 1 b replace a:0,a:0\n").is_err()
        );
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
