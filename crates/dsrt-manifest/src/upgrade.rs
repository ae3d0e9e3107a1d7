//! The v2 -> v3 rewrite, done on the manifest's text so that every byte other than the version
//! value and the inserted `cache_id` member stays as it was: unknown keys, key order,
//! whitespace and number spellings included.

use crate::{Manifest, ManifestError};

/// Rewrites a v2 manifest's bytes as v3 with `cache_id`.
///
/// `format_version`'s value becomes `3` and a `"cache_id": <id>` member is inserted right after
/// it, using the whitespace that separates the first two members of the object so a
/// pretty-printed manifest stays pretty. The result is parsed again before it is returned.
pub fn upgrade_v2_to_v3(bytes: &[u8], cache_id: u64) -> Result<Vec<u8>, ManifestError> {
    match Manifest::parse(bytes)? {
        Manifest::V2(_) => {}
        Manifest::V3(_) => return Err(malformed("the manifest is already format_version 3")),
    }
    let members =
        top_level_members(bytes).ok_or_else(|| malformed("cannot locate top-level members"))?;
    let version = members
        .iter()
        .find(|m| key_is(bytes, m, "format_version"))
        .ok_or_else(|| malformed("format_version not found"))?;
    let separator = members.get(1).map_or(&b" "[..], |second| {
        whitespace_before(bytes, second.key_start)
    });
    let mut out = Vec::with_capacity(bytes.len() + 32);
    out.extend_from_slice(&bytes[..version.value_start]);
    out.push(b'3');
    out.push(b',');
    out.extend_from_slice(separator);
    out.extend_from_slice(format!("\"cache_id\": {cache_id}").as_bytes());
    out.extend_from_slice(&bytes[version.value_end..]);
    match Manifest::parse(&out)? {
        Manifest::V3(m) if m.cache_id == cache_id => Ok(out),
        _ => Err(malformed("the rewritten manifest did not parse as v3")),
    }
}

fn malformed(why: &str) -> ManifestError {
    ManifestError::Malformed(serde::de::Error::custom(why))
}

/// Byte spans of one `"key": value` member of the top-level object.
#[derive(Debug)]
struct Member {
    key_start: usize,
    key_end: usize,
    value_start: usize,
    value_end: usize,
}

fn key_is(bytes: &[u8], member: &Member, name: &str) -> bool {
    let raw = &bytes[member.key_start..member.key_end];
    match serde_json::from_slice::<String>(raw) {
        Ok(key) => key == name,
        Err(_) => false,
    }
}

fn whitespace_before(bytes: &[u8], end: usize) -> &[u8] {
    let start = bytes[..end]
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    &bytes[start..end]
}

/// Locates the members of the top-level object of already-valid JSON.
fn top_level_members(bytes: &[u8]) -> Option<Vec<Member>> {
    let mut scan = Scanner { bytes, at: 0 };
    scan.skip_ws();
    scan.expect(b'{')?;
    let mut members = Vec::new();
    loop {
        scan.skip_ws();
        if scan.peek()? == b'}' {
            return Some(members);
        }
        let key_start = scan.at;
        scan.skip_string()?;
        let key_end = scan.at;
        scan.skip_ws();
        scan.expect(b':')?;
        scan.skip_ws();
        let value_start = scan.at;
        scan.skip_value()?;
        members.push(Member {
            key_start,
            key_end,
            value_start,
            value_end: scan.at,
        });
        scan.skip_ws();
        match scan.next()? {
            b',' => continue,
            b'}' => return Some(members),
            _ => return None,
        }
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            match self.next()? {
                b'\\' => {
                    self.next()?;
                }
                b'"' => return Some(()),
                _ => {}
            }
        }
    }

    /// Skips one value; nested containers are skipped by depth, strings by their quotes.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => self.skip_string()?,
                        b'{' | b'[' => {
                            depth += 1;
                            self.at += 1;
                        }
                        b'}' | b']' => {
                            depth -= 1;
                            self.at += 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => self.at += 1,
                    }
                }
            }
            _ => {
                while self
                    .peek()
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn v2(layout: &str) -> String {
        layout.replace("HEX", HEX)
    }

    #[test]
    fn keeps_every_other_byte() {
        let pretty = v2(r#"{
  "source": "s",
  "format_version": 2,
  "x-unknown": {"nested": [1, 2.50, "}"]},
  "sample_count": 0,
  "metadata_schema": [],
  "index_sha256": "HEX",
  "metadata_sha256": "HEX",
  "shards": []
}
"#);
        let out = String::from_utf8(upgrade_v2_to_v3(pretty.as_bytes(), 7).unwrap()).unwrap();
        let expected = pretty.replace(
            "\"format_version\": 2,",
            "\"format_version\": 3,\n  \"cache_id\": 7,",
        );
        assert_eq!(out, expected);
        let compact = v2(
            r#"{"format_version":2,"source":"s","sample_count":0,"metadata_schema":[],"index_sha256":"HEX","metadata_sha256":"HEX","shards":[]}"#,
        );
        let out =
            String::from_utf8(upgrade_v2_to_v3(compact.as_bytes(), u64::MAX).unwrap()).unwrap();
        assert!(
            out.starts_with(r#"{"format_version":3,"cache_id": 18446744073709551615,"source""#),
            "{out}"
        );
    }

    #[test]
    fn refuses_v3_and_garbage() {
        assert!(upgrade_v2_to_v3(b"{}", 1).is_err());
        let v3 = v2(
            r#"{"format_version":3,"cache_id":1,"source":"s","sample_count":0,"metadata_schema":[],"index_sha256":"HEX","metadata_sha256":"HEX","shards":[]}"#,
        );
        assert!(upgrade_v2_to_v3(v3.as_bytes(), 1).is_err());
    }
}
