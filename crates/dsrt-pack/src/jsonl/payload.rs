//! Turning a JSONL payload field into payload bytes: a file path, inline base64 or inline text.

use super::problem::{json_kind, InputProblem};
use super::JsonRecord;
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;

/// How a line's payload field is read. (A new way of reading one, a token array say, is one
/// more variant here and one more arm of the reader's `load`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PayloadEncoding {
    /// A file path, relative to the JSONL file's directory; the file's bytes are the payload.
    #[default]
    Path,
    /// Inline standard base64 (padding optional).
    Base64,
    /// The string's own UTF-8 bytes.
    Text,
}

/// Standard alphabet; padding optional, since producers differ and no bytes are ambiguous.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The payload field's string, or why the record has none.
pub(crate) fn payload_text<'r>(
    record: &'r JsonRecord,
    field: &str,
) -> Result<&'r str, InputProblem> {
    match record.get(field) {
        Some(serde_json::Value::String(text)) => Ok(text),
        Some(other) => Err(InputProblem::PayloadNotString {
            field: field.to_owned(),
            found: json_kind(other),
        }),
        None => Err(InputProblem::PayloadMissing {
            field: field.to_owned(),
        }),
    }
}

/// Loads payloads one at a time into a reused buffer, so memory stays at the largest one.
#[derive(Debug)]
pub(crate) struct PayloadReader {
    encoding: PayloadEncoding,
    base_dir: PathBuf,
    buf: Vec<u8>,
}

impl PayloadReader {
    /// Reads payloads given as `encoding`; relative paths start at `base_dir`.
    pub(crate) fn new(encoding: PayloadEncoding, base_dir: PathBuf) -> Self {
        Self {
            encoding,
            base_dir,
            buf: Vec::new(),
        }
    }

    /// The payload bytes `text` (the value of `field`) stands for.
    pub(crate) fn load<'a>(
        &'a mut self,
        field: &str,
        text: &'a str,
    ) -> Result<&'a [u8], InputProblem> {
        match self.encoding {
            PayloadEncoding::Text => Ok(text.as_bytes()),
            PayloadEncoding::Base64 => {
                self.buf.clear();
                BASE64.decode_vec(text, &mut self.buf).map_err(|e| {
                    InputProblem::PayloadBase64 {
                        field: field.to_owned(),
                        reason: e.to_string(),
                    }
                })?;
                Ok(&self.buf)
            }
            PayloadEncoding::Path => {
                let path = self.base_dir.join(text);
                self.buf.clear();
                File::open(&path)
                    .and_then(|mut file| file.read_to_end(&mut self.buf))
                    .map_err(|source| InputProblem::PayloadFile {
                        field: field.to_owned(),
                        path,
                        source,
                    })?;
                Ok(&self.buf)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_base64_with_or_without_padding() {
        let mut reader = PayloadReader::new(PayloadEncoding::Base64, PathBuf::new());
        assert_eq!(reader.load("p", "aGk=").unwrap(), b"hi");
        assert_eq!(reader.load("p", "aGk").unwrap(), b"hi");
        assert_eq!(reader.load("p", "").unwrap(), b"");
        let err = reader.load("p", "a*b").unwrap_err().to_string();
        assert!(err.contains("\"p\" is not valid base64"), "{err}");
    }

    #[test]
    fn names_the_missing_file() {
        let mut reader =
            PayloadReader::new(PayloadEncoding::Path, PathBuf::from("/nonexistent-dir"));
        let err = reader.load("img", "a.png").unwrap_err().to_string();
        assert!(
            err.contains("/nonexistent-dir/a.png") && err.contains("\"img\""),
            "{err}"
        );
    }
}
