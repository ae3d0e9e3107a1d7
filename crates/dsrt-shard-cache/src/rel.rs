//! Relative paths inside the cache root, and the names the protocol reserves.

use crate::ShardCacheError;
use std::path::{Component, Path, PathBuf};

/// Suffix of a file being downloaded: `<rel>.partial`, beside its final name.
pub(crate) const PARTIAL_SUFFIX: &str = ".partial";
/// Prefix of every name the cache itself owns (pin list, temporary files of `put_bytes`).
pub(crate) const RESERVED_PREFIX: &str = ".shard-cache";
/// The pin list: one relative path per line, placed by `put_bytes`, never evicted.
pub(crate) const PIN_LIST: &str = ".shard-cache-pinned";
/// Prefix of the temporary file `put_bytes` writes beside its target: `.shard-cache-tmp.<name>`.
pub(crate) const TEMP_PREFIX: &str = ".shard-cache-tmp.";

/// A checked relative path: `/`-separated UTF-8 normal components, no reserved name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Rel {
    /// Components joined with `/` (the pin-list spelling).
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
                    parts.push(name);
                }
                Component::ParentDir => return Err(invalid("`..` may not appear")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(invalid("must be relative to the cache root"))
                }
                Component::CurDir => return Err(invalid("`.` may not appear")),
            }
        }
        let Some(last) = parts.last() else {
            return Err(invalid("empty"));
        };
        if last.ends_with(PARTIAL_SUFFIX) {
            return Err(invalid(
                "names ending in .partial are reserved for downloads",
            ));
        }
        Ok(Self {
            text: parts.join("/"),
        })
    }

    /// The pin-list spelling.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The final file.
    pub(crate) fn final_path(&self, root: &Path) -> PathBuf {
        root.join(&self.text)
    }

    /// The download's partial file (and lock), beside the final one.
    pub(crate) fn partial_path(&self, root: &Path) -> PathBuf {
        root.join(format!("{}{PARTIAL_SUFFIX}", self.text))
    }
}

/// What a file name under the root is, by the protocol's naming rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A download in progress, or a stale one.
    Partial,
    /// A temporary file of `put_bytes` (of the pin list too): stale whenever the directory
    /// lock is held.
    Temp,
    /// The pin list.
    PinList,
    /// Any other name the cache reserves; left alone.
    OtherReserved,
    /// A final file.
    Final,
}

/// Classifies a file name found under the root.
pub(crate) fn kind(name: &str) -> Kind {
    if name.starts_with(TEMP_PREFIX) {
        Kind::Temp
    } else if name == PIN_LIST {
        Kind::PinList
    } else if name.starts_with(RESERVED_PREFIX) {
        Kind::OtherReserved
    } else if name.ends_with(PARTIAL_SUFFIX) {
        Kind::Partial
    } else {
        Kind::Final
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
        assert_eq!(
            rel.partial_path(root),
            Path::new("/cache/mycache-1a2b/shards/000001.bin.partial")
        );
        // Doubled separators collapse; the spelling is canonical.
        let rel = Rel::new(Path::new("a//b.bin")).unwrap();
        assert_eq!(rel.as_str(), "a/b.bin");
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
    fn reserved_names_are_refused() {
        assert!(reason("a/b.partial").contains("partial"));
        assert!(reason(".shard-cache-pinned").contains("reserved"));
        assert!(reason("d/.shard-cache-tmp.x").contains("reserved"));
        assert!(reason("a\nb").contains("newline"));
        // `.partial` inside a directory name is fine: only the final name is a download's.
        assert!(Rel::new(Path::new("x.partial/y.bin")).is_ok());
    }

    #[test]
    fn names_are_classified() {
        assert_eq!(kind("000001.bin"), Kind::Final);
        assert_eq!(kind("000001.bin.partial"), Kind::Partial);
        assert_eq!(kind(".shard-cache-tmp.manifest.json"), Kind::Temp);
        assert_eq!(kind(".shard-cache-tmp..shard-cache-pinned"), Kind::Temp);
        assert_eq!(kind(".shard-cache-pinned"), Kind::PinList);
        assert_eq!(kind(".shard-cache-future"), Kind::OtherReserved);
    }
}
