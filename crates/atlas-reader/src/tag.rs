//! Tags of a growing collection (`docs/format/growing.md`, "Tags"): a name for one version,
//! kept as the small object `tags/<name>` beside the manifest, written once.
//!
//! ```text
//! atlas-tag 1
//! <version>
//! ```

use crate::error::{AtlasError, GrowingProblem};
use crate::manifest::is_valid_part_id;
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// The directory (prefix) under the collection that holds its tags.
pub const TAGS_DIR: &str = "tags";
/// The first line of every tag object of this version.
const TAG_HEADER: &str = "atlas-tag 1";

/// Whether `name` may name a tag: the part ids' rule, 1 to 64 of `[0-9a-z_-]` (one path
/// segment everywhere).
pub fn is_valid_tag_name(name: &str) -> bool {
    is_valid_part_id(name)
}

/// The tag object `tags/<name>` of the collection at `prefix`; an invalid name is refused
/// (`GrowingProblem::InvalidTagName`) before any request.
pub fn tag_path(prefix: &Path, name: &str) -> Result<Path, AtlasError> {
    if !is_valid_tag_name(name) {
        return Err(AtlasError::Growing {
            path: prefix.clone().join(TAGS_DIR).to_string(),
            problem: GrowingProblem::InvalidTagName(name.to_owned()),
        });
    }
    Ok(prefix.clone().join(TAGS_DIR).join(name))
}

/// The bytes of a tag naming `version`.
pub fn encode_tag(version: u64) -> Vec<u8> {
    format!("{TAG_HEADER}\n{version}\n").into_bytes()
}

/// The version a tag object's bytes name; damaged bytes are `CorruptCollection` naming `path`.
pub fn decode_tag(path: &Path, bytes: &[u8]) -> Result<u64, AtlasError> {
    let corrupt = |reason: &str| AtlasError::corrupt(path.as_ref(), "tag", reason.to_owned());
    let text = std::str::from_utf8(bytes).map_err(|_| corrupt("not UTF-8"))?;
    let body = text
        .strip_prefix(TAG_HEADER)
        .and_then(|rest| rest.strip_prefix('\n'))
        .ok_or_else(|| corrupt("the first line is not 'atlas-tag 1'"))?;
    let digits = body
        .strip_suffix('\n')
        .ok_or_else(|| corrupt("the version line has no final newline"))?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    match digits.parse::<u64>() {
        Ok(version) if canonical && version > 0 => Ok(version),
        _ => Err(corrupt("the version is not a canonical decimal from 1")),
    }
}

/// The version tag `name` of the collection at `prefix` names (one GET); a tag that does not
/// exist is `GrowingProblem::NoSuchTag`.
pub async fn read_tag(
    store: &dyn ObjectStore,
    prefix: &Path,
    name: &str,
) -> Result<u64, AtlasError> {
    let path = tag_path(prefix, name)?;
    let bytes: Bytes = match store.get(&path).await {
        Ok(result) => result.bytes().await?,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(AtlasError::Growing {
                path: path.to_string(),
                problem: GrowingProblem::NoSuchTag(name.to_owned()),
            })
        }
        Err(e) => return Err(e.into()),
    };
    decode_tag(&path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_pinned_and_damage_is_refused() {
        let path = Path::from("c/tags/t");
        assert_eq!(encode_tag(17), b"atlas-tag 1\n17\n");
        assert_eq!(decode_tag(&path, &encode_tag(17)).unwrap(), 17);
        for bad in [
            &b"atlas-tag 2\n1\n"[..],
            b"atlas-tag 1\n1",
            b"atlas-tag 1\n0\n",
            b"atlas-tag 1\n01\n",
            b"atlas-tag 1\n+1\n",
            b"atlas-tag 1\n1\n2\n",
            b"",
        ] {
            let error = decode_tag(&path, bad).unwrap_err();
            assert!(
                matches!(error, AtlasError::CorruptCollection { .. }),
                "{bad:?}: {error}"
            );
        }
        assert!(tag_path(&path, "Not/valid").is_err());
        assert!(tag_path(&path, "").is_err());
        assert!(tag_path(&path, "release-1_0").is_ok());
    }
}
