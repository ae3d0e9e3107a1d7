//! Relative paths inside the cache root, and the names the protocol reserves.

use crate::ShardCacheError;
use std::path::{Component, Path, PathBuf};

/// Prefix of every name the cache itself owns: the marker, seals, partial and temporary files.
/// A user's file never starts with it, so the cache can tell its own files by name.
pub(crate) const RESERVED_PREFIX: &str = ".shard-cache";
/// The marker in the root that says the directory is a shard cache, and whose.
pub(crate) const MARKER: &str = ".shard-cache-root";
/// Prefix of a download in progress: `<dir>/.shard-cache-partial.<name>`, beside its final name.
pub(crate) const PARTIAL_PREFIX: &str = ".shard-cache-partial.";
/// Prefix of a final file's seal: `<dir>/.shard-cache-seal.<name>` says the cache wrote `<name>`.
pub(crate) const SEAL_PREFIX: &str = ".shard-cache-seal.";
/// Prefix of the temporary file of a seal or marker being written: `.shard-cache-tmp.<unique>`.
pub(crate) const TEMP_PREFIX: &str = ".shard-cache-tmp.";
/// The longest final name: with the longest prefix it still fits a file name (255 bytes).
pub(crate) const MAX_NAME_BYTES: usize = 255 - PARTIAL_PREFIX.len();

/// A checked relative path: `/`-separated UTF-8 normal components, no reserved name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Rel {
    /// Components joined with `/` (the canonical spelling).
    text: String,
}

impl Rel {
    /// Checks `path` as the protocol requires.
    pub(crate) fn new(path: &Path) -> Result<Self, ShardCacheError> {
        let invalid = |reason| ShardCacheError::InvalidPath {
            path: path.to_path_buf(),
            reason,
        };
        let mut parts = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(name) => {
                    let name = name
                        .to_str()
                        .ok_or_else(|| invalid("a component is not UTF-8"))?;
                    if name.contains(['\n', '\r', '\\']) {
                        return Err(invalid("a component holds a newline or a backslash"));
                    }
                    if name.starts_with(RESERVED_PREFIX) {
                        return Err(invalid("names starting with .shard-cache are reserved"));
                    }
                    if name.len() > MAX_NAME_BYTES {
                        return Err(invalid("a component is longer than 234 bytes"));
                    }
                    parts.push(name);
                }
                Component::ParentDir => return Err(invalid("`..` may not appear")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(invalid("must be relative to the cache root"))
                }
                Component::CurDir => return Err(invalid("`.` may not appear")),
            }
        }
        if parts.is_empty() {
            return Err(invalid("empty"));
        }
        Ok(Self {
            text: parts.join("/"),
        })
    }

    /// The canonical spelling.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The directories above the file, outermost first.
    pub(crate) fn dirs(&self) -> impl Iterator<Item = &str> {
        let mut parts = self.text.split('/');
        parts.next_back();
        parts
    }

    /// The file's own name.
    pub(crate) fn name(&self) -> &str {
        self.text.rsplit('/').next().unwrap_or(&self.text)
    }

    /// The final file.
    pub(crate) fn final_path(&self, root: &Path) -> PathBuf {
        root.join(&self.text)
    }

    /// The name of the download's partial file (and lock), beside the final one.
    pub(crate) fn partial_name(&self) -> String {
        format!("{PARTIAL_PREFIX}{}", self.name())
    }

    /// The name of the final file's seal, beside it.
    pub(crate) fn seal_name(&self) -> String {
        format!("{SEAL_PREFIX}{}", self.name())
    }

    /// The path of a sibling of the final file (for messages).
    pub(crate) fn sibling_path(&self, root: &Path, name: &str) -> PathBuf {
        let mut path = root.to_path_buf();
        path.extend(self.dirs());
        path.join(name)
    }
}

/// What a file name under the root is, by the protocol's naming rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind<'a> {
    /// A download in progress, or a stale one, of the final file named.
    Partial,
    /// A temporary file of a seal or marker: stale whenever the directory lock is held.
    Temp,
    /// The seal of the final file named.
    Seal(&'a str),
    /// The marker.
    Marker,
    /// Any other name the cache reserves; left alone.
    OtherReserved,
    /// A final file if a seal says so; otherwise a file the cache did not write.
    Unreserved,
}

/// Classifies a file name found under the root.
pub(crate) fn kind(name: &str) -> Kind<'_> {
    if let Some(sealed) = name.strip_prefix(SEAL_PREFIX) {
        Kind::Seal(sealed)
    } else if name.starts_with(PARTIAL_PREFIX) {
        Kind::Partial
    } else if name.starts_with(TEMP_PREFIX) {
        Kind::Temp
    } else if name == MARKER {
        Kind::Marker
    } else if name.starts_with(RESERVED_PREFIX) {
        Kind::OtherReserved
    } else {
        Kind::Unreserved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> &'static str {
        match Rel::new(Path::new(path)) {
            Err(ShardCacheError::InvalidPath { reason, path: p }) => {
                assert_eq!(p, Path::new(path));
                reason
            }
            other => panic!("{path:?} accepted: {other:?}"),
        }
    }

    #[test]
    fn relative_paths_are_accepted_and_normalised() {
        let rel = Rel::new(Path::new("mycache-1a2b/shards/000001.bin")).unwrap();
        assert_eq!(rel.as_str(), "mycache-1a2b/shards/000001.bin");
        let root = Path::new("/cache");
        assert_eq!(
            rel.final_path(root),
            Path::new("/cache/mycache-1a2b/shards/000001.bin")
        );
        assert_eq!(rel.dirs().collect::<Vec<_>>(), ["mycache-1a2b", "shards"]);
        assert_eq!(rel.name(), "000001.bin");
        assert_eq!(rel.partial_name(), ".shard-cache-partial.000001.bin");
        assert_eq!(rel.seal_name(), ".shard-cache-seal.000001.bin");
        // Doubled separators collapse; the spelling is canonical.
        let rel = Rel::new(Path::new("a//b.bin")).unwrap();
        assert_eq!(rel.as_str(), "a/b.bin");
        assert_eq!(Rel::new(Path::new("top.bin")).unwrap().dirs().count(), 0);
    }

    #[test]
    fn absolute_paths_are_refused() {
        assert!(reason("/etc/passwd").contains("relative"));
        assert!(reason("/").contains("relative"));
    }

    #[test]
    fn parent_components_are_refused() {
        assert!(reason("..").contains(".."));
        assert!(reason("a/../b").contains(".."));
        assert!(reason("../outside.bin").contains(".."));
    }

    #[test]
    fn empty_and_dot_paths_are_refused() {
        assert!(reason("").contains("empty"));
        assert!(reason("./a").contains('.'));
    }

    #[test]
    fn reserved_and_overlong_names_are_refused() {
        assert!(reason(".shard-cache-root").contains("reserved"));
        assert!(reason("d/.shard-cache-tmp.x").contains("reserved"));
        assert!(reason("a\nb").contains("newline"));
        assert!(reason(&"x".repeat(235)).contains("234"));
        assert!(Rel::new(Path::new(&"x".repeat(234))).is_ok());
        // Only the cache's prefix is reserved: a user's `.partial` name is an ordinary one.
        assert!(Rel::new(Path::new("x.partial/y.partial")).is_ok());
    }

    #[test]
    fn names_are_classified() {
        assert_eq!(kind("000001.bin"), Kind::Unreserved);
        assert_eq!(kind("000001.bin.partial"), Kind::Unreserved);
        assert_eq!(kind(".shard-cache-partial.000001.bin"), Kind::Partial);
        assert_eq!(
            kind(".shard-cache-seal.000001.bin"),
            Kind::Seal("000001.bin")
        );
        assert_eq!(kind(".shard-cache-tmp.123-4-5"), Kind::Temp);
        assert_eq!(kind(".shard-cache-root"), Kind::Marker);
        assert_eq!(kind(".shard-cache-future"), Kind::OtherReserved);
    }
}
