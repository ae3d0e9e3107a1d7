//! [`TokenDtype`] and [`TokenInfo`]: what the manifest's `tokens` key holds.

use crate::TokenError;
use dsrt_manifest::Manifest;
use serde_json::{json, Map, Value};
use std::fmt;
use std::path::Path;

/// The manifest's top-level key that makes a cache a token cache.
pub const TOKENS_KEY: &str = "tokens";

/// The `int64`, non-nullable metadata column holding each document's token count; the first
/// column of every cache a [`crate::TokenWriter`] writes.
pub const N_TOKENS_COLUMN: &str = "n_tokens";

/// The width of every id in a token cache's payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenDtype {
    /// Little-endian `u16`: ids up to 65,535 (a vocabulary of up to 65,536).
    U16,
    /// Little-endian `u32`.
    U32,
}

impl TokenDtype {
    /// The narrowest width that holds every id of a vocabulary of `vocab_size` ids
    /// (`0..vocab_size`): `U16` up to 65,536, else `U32`.
    pub fn for_vocab(vocab_size: u64) -> Self {
        if vocab_size <= 1 << 16 {
            Self::U16
        } else {
            Self::U32
        }
    }

    /// Bytes per id.
    pub fn width(self) -> usize {
        match self {
            Self::U16 => 2,
            Self::U32 => 4,
        }
    }

    /// The largest id the width holds.
    pub fn max_id(self) -> u32 {
        match self {
            Self::U16 => u32::from(u16::MAX),
            Self::U32 => u32::MAX,
        }
    }

    /// Its name in the manifest: `"uint16"` or `"uint32"` (NumPy's names).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::U16 => "uint16",
            Self::U32 => "uint32",
        }
    }

    /// The dtype named `name` (`"uint16"` or `"uint32"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "uint16" => Some(Self::U16),
            "uint32" => Some(Self::U32),
            _ => None,
        }
    }

    /// The width a writer is given as `token_dtype` and `vocab_size`: the one named, else the
    /// narrowest that holds the vocabulary ([`Self::for_vocab`]); neither is refused (whether
    /// the vocabulary fits a named width is [`TokenInfo::check`]'s).
    pub fn choose(name: Option<&str>, vocab_size: Option<u64>) -> Result<Self, DtypeChoiceError> {
        match (name, vocab_size) {
            (Some(name), _) => {
                Self::parse(name).ok_or_else(|| DtypeChoiceError::UnknownName(name.to_owned()))
            }
            (None, Some(size)) => Ok(Self::for_vocab(size)),
            (None, None) => Err(DtypeChoiceError::Neither),
        }
    }
}

/// Why [`TokenDtype::choose`] cannot choose a width.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DtypeChoiceError {
    /// The name given is not a width's.
    #[error("token_dtype must be \"uint16\" or \"uint32\", not {0:?}")]
    UnknownName(String),
    /// Neither a width nor a vocabulary size was given.
    #[error("give token_dtype (\"uint16\" or \"uint32\") or vocab_size")]
    Neither,
}

impl fmt::Display for TokenDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a token cache records about its tokens: the id width, and what is known of the
/// tokenizer. Everything but the width is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// The id width.
    pub dtype: TokenDtype,
    /// The vocabulary size: every id is below it.
    pub vocab_size: Option<u64>,
    /// The beginning-of-sequence id.
    pub bos_id: Option<u32>,
    /// The end-of-sequence (end-of-document) id.
    pub eos_id: Option<u32>,
    /// The padding id.
    pub pad_id: Option<u32>,
    /// The tokenizer's name (free text: a hub name, a file name).
    pub tokenizer: Option<String>,
}

impl TokenInfo {
    /// Ids of width `dtype`, nothing else known.
    pub fn new(dtype: TokenDtype) -> Self {
        Self {
            dtype,
            vocab_size: None,
            bos_id: None,
            eos_id: None,
            pad_id: None,
            tokenizer: None,
        }
    }

    /// A vocabulary of `vocab_size` ids, in the narrowest width that holds it.
    pub fn for_vocab(vocab_size: u64) -> Self {
        Self {
            vocab_size: Some(vocab_size),
            ..Self::new(TokenDtype::for_vocab(vocab_size))
        }
    }

    /// The largest id a document may hold: the width's, or below the vocabulary size.
    pub fn max_id(&self) -> u32 {
        let width = self.dtype.max_id();
        match self.vocab_size {
            Some(size) => u32::try_from(size.saturating_sub(1)).map_or(width, |v| v.min(width)),
            None => width,
        }
    }

    /// Refuses what no cache can hold: a vocabulary of 0 ids or one the width cannot hold
    /// (`U16` with more than 65,536), a special id beyond the width or the vocabulary. `path`
    /// names the cache in the error.
    pub fn check(&self, path: &Path) -> Result<(), TokenError> {
        let bad = |reason: String| TokenError::BadTokenInfo {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(size) = self.vocab_size {
            let widest = u64::from(self.dtype.max_id()) + 1;
            if size == 0 {
                return Err(bad("vocab_size is 0".into()));
            }
            if size > widest {
                return Err(bad(format!(
                    "vocab_size {size} does not fit dtype {} (at most {widest} ids); use uint32",
                    self.dtype
                )));
            }
        }
        for (name, id) in [
            ("bos_id", self.bos_id),
            ("eos_id", self.eos_id),
            ("pad_id", self.pad_id),
        ] {
            if let Some(id) = id.filter(|&id| id > self.max_id()) {
                return Err(bad(format!(
                    "{name} {id} is beyond the largest id {} ({})",
                    self.max_id(),
                    self.limit()
                )));
            }
        }
        Ok(())
    }

    /// What bounds the ids, for messages: "dtype uint16" or "vocab_size 50257".
    pub fn limit(&self) -> String {
        match self.vocab_size {
            Some(size) if u64::from(self.dtype.max_id()) >= size => format!("vocab_size {size}"),
            _ => format!("dtype {}", self.dtype),
        }
    }

    /// The value of the manifest's `tokens` key: every field, absent ones as `null`.
    pub fn to_json(&self) -> Value {
        json!({
            "dtype": self.dtype.as_str(),
            "vocab_size": self.vocab_size,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "pad_id": self.pad_id,
            "tokenizer": self.tokenizer,
        })
    }

    /// Reads the value of a `tokens` key. Unknown fields are ignored (as every reader ignores
    /// unknown manifest keys); a known one of the wrong type, or an unknown dtype, is
    /// refused. `path` names the cache in the error.
    pub fn from_json(value: &Value, path: &Path) -> Result<Self, TokenError> {
        let bad = |reason: String| TokenError::BadTokenInfo {
            path: path.to_path_buf(),
            reason,
        };
        let object: &Map<String, Value> = value
            .as_object()
            .ok_or_else(|| bad(format!("`tokens` is {value}, not an object")))?;
        let dtype = match object.get("dtype") {
            Some(Value::String(name)) => TokenDtype::parse(name).ok_or_else(|| {
                bad(format!(
                    "dtype {name:?} is not one this reader knows (uint16, uint32)"
                ))
            })?,
            Some(other) => return Err(bad(format!("dtype is {other}, not a string"))),
            None => return Err(bad("no dtype".into())),
        };
        let integer = |name: &str| -> Result<Option<u64>, TokenError> {
            match object.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| bad(format!("{name} is {v}, not a non-negative integer"))),
            }
        };
        let id = |name: &str| -> Result<Option<u32>, TokenError> {
            integer(name)?
                .map(|v| {
                    u32::try_from(v).map_err(|_| bad(format!("{name} {v} is not a 32-bit id")))
                })
                .transpose()
        };
        let tokenizer = match object.get("tokenizer") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(other) => return Err(bad(format!("tokenizer is {other}, not a string"))),
        };
        let info = Self {
            dtype,
            vocab_size: integer("vocab_size")?,
            bos_id: id("bos_id")?,
            eos_id: id("eos_id")?,
            pad_id: id("pad_id")?,
            tokenizer,
        };
        info.check(path)?;
        Ok(info)
    }

    /// The token info of the cache whose manifest is `manifest` (at `path`), or `None` when it
    /// is not a token cache.
    pub fn of_manifest(manifest: &Manifest, path: &Path) -> Result<Option<Self>, TokenError> {
        manifest
            .extra_key(TOKENS_KEY)
            .map(|value| Self::from_json(value, path))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writers_width_is_the_one_named_else_the_vocabularys() {
        let choose = TokenDtype::choose;
        assert_eq!(choose(Some("uint32"), None), Ok(TokenDtype::U32));
        assert_eq!(choose(Some("uint16"), Some(128_256)), Ok(TokenDtype::U16));
        assert_eq!(choose(None, Some(128_256)), Ok(TokenDtype::U32));
        assert_eq!(choose(None, Some(50_257)), Ok(TokenDtype::U16));
        let unknown = choose(Some("int8"), Some(10)).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "token_dtype must be \"uint16\" or \"uint32\", not \"int8\""
        );
        let neither = choose(None, None).unwrap_err();
        assert_eq!(
            neither.to_string(),
            "give token_dtype (\"uint16\" or \"uint32\") or vocab_size"
        );
    }

    #[test]
    fn the_width_follows_the_vocabulary() {
        assert_eq!(TokenDtype::for_vocab(50_257), TokenDtype::U16);
        assert_eq!(TokenDtype::for_vocab(65_536), TokenDtype::U16);
        assert_eq!(TokenDtype::for_vocab(65_537), TokenDtype::U32);
        assert_eq!(TokenDtype::for_vocab(128_256), TokenDtype::U32);
        assert_eq!(TokenInfo::for_vocab(65_536).max_id(), 65_535);
        assert_eq!(TokenInfo::for_vocab(10).max_id(), 9);
        assert_eq!(TokenInfo::new(TokenDtype::U32).max_id(), u32::MAX);
    }

    #[test]
    fn round_trips_through_json_and_refuses_what_cannot_be() {
        let path = Path::new("c");
        let info = TokenInfo {
            bos_id: Some(1),
            eos_id: Some(2),
            tokenizer: Some("gpt2".into()),
            ..TokenInfo::for_vocab(50_257)
        };
        assert_eq!(TokenInfo::from_json(&info.to_json(), path).unwrap(), info);
        let cases = [
            json!({"dtype": "uint8"}),
            json!({"dtype": 16}),
            json!({"vocab_size": 5}),
            json!({"dtype": "uint16", "vocab_size": 65_537}),
            json!({"dtype": "uint16", "vocab_size": 0}),
            json!({"dtype": "uint16", "vocab_size": 10, "eos_id": 10}),
            json!({"dtype": "uint32", "bos_id": -1}),
            json!({"dtype": "uint32", "pad_id": 4_294_967_296_u64}),
            json!({"dtype": "uint32", "tokenizer": 3}),
            json!([1]),
        ];
        for case in cases {
            let err = TokenInfo::from_json(&case, path).unwrap_err();
            assert!(
                matches!(err, TokenError::BadTokenInfo { .. }),
                "{case}: {err}"
            );
        }
        let extra = json!({"dtype": "uint32", "future": {"x": 1}});
        assert_eq!(
            TokenInfo::from_json(&extra, path).unwrap(),
            TokenInfo::new(TokenDtype::U32)
        );
    }
}
