//! Token inputs: documents whose ids are a table's list column, or whose text a tokenizer turns
//! into ids in the workers. Both write token caches (`dsrt-tokens`): each document's ids as
//! its payload, checked against the width and the vocabulary by [`TokenEncoder`], its length
//! as the first metadata column `n_tokens`, the token info as the manifest's `tokens` key.

use crate::PackError;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowPrimitiveType, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::Array;
use arrow_schema::DataType;
use dsrt_schema::{Column, ColumnType, Schema};
use dsrt_tokens::{TokenDtype, TokenEncoder, TokenId, TokenInfo, N_TOKENS_COLUMN};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a token input's payload column holds.
#[derive(Debug, Clone)]
pub enum TokenColumn {
    /// Token ids: a list, large list or fixed-size list of any integer type. With `None` the
    /// width follows the lists' integer type (`uint16` for 8- and 16-bit integers, else
    /// `uint32`) and nothing else is known.
    Ids(Option<TokenInfo>),
    /// Text, tokenized in the workers.
    Text(Arc<TextTokenizer>),
}

/// How text becomes ids: a Hugging Face `tokenizer.json`, with the options of the Python
/// `tokenizers` package's `encode_batch` (`add_special_tokens`) and an end-of-document id
/// appended or not. The ids are those `Tokenizer.from_file(path).encode_batch(texts,
/// add_special_tokens=...)` gives (tested against that package).
pub struct TextTokenizer {
    tokenizer: tokenizers::Tokenizer,
    add_special_tokens: bool,
    append_eos: bool,
    info: TokenInfo,
    path: PathBuf,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("path", &self.path)
            .field("info", &self.info)
            .field("add_special_tokens", &self.add_special_tokens)
            .field("append_eos", &self.append_eos)
            .finish_non_exhaustive()
    }
}

/// Names special tokens go by in common tokenizers, most specific first.
const EOS_NAMES: [&str; 5] = ["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "[SEP]"];
const BOS_NAMES: [&str; 4] = ["<|begin_of_text|>", "<s>", "<bos>", "[CLS]"];
const PAD_NAMES: [&str; 4] = ["<pad>", "[PAD]", "<|pad|>", "<|finetune_right_pad_id|>"];

/// Options of a [`TextTokenizer`].
#[derive(Debug, Clone, Default)]
pub struct TextOptions {
    /// Whether the tokenizer adds its special tokens (BOS, CLS/SEP, ...), as the Python
    /// package's `add_special_tokens`.
    pub add_special_tokens: bool,
    /// Whether the EOS id ends every document.
    pub append_eos: bool,
    /// The BOS id, when not the tokenizer's token of a usual name.
    pub bos_id: Option<u32>,
    /// The EOS id, when not the tokenizer's token of a usual name.
    pub eos_id: Option<u32>,
    /// The pad id, when not the tokenizer's token of a usual name.
    pub pad_id: Option<u32>,
}

impl TextTokenizer {
    /// Loads `path` (a `tokenizer.json`). The vocabulary size is one past the largest id of
    /// its vocabulary and added tokens; the BOS, EOS and pad ids are the options' or else
    /// those of tokens named as usual (`<|endoftext|>`, `</s>`, `<s>`, `[PAD]`, ...). With
    /// `append_eos` an EOS id is required.
    pub fn from_file(path: &Path, options: TextOptions) -> Result<Self, PackError> {
        let refuse = |reason: String| PackError::Tokenizer {
            input: path.display().to_string(),
            reason,
        };
        let tokenizer =
            tokenizers::Tokenizer::from_file(path).map_err(|e| refuse(e.to_string()))?;
        let vocab = tokenizer.get_vocab(true);
        let max = vocab.values().copied().max().unwrap_or(0);
        let named = |names: &[&str]| names.iter().find_map(|name| vocab.get(*name).copied());
        let vocab_size = u64::from(max) + 1;
        let info = TokenInfo {
            bos_id: options.bos_id.or_else(|| named(&BOS_NAMES)),
            eos_id: options.eos_id.or_else(|| named(&EOS_NAMES)),
            pad_id: options.pad_id.or_else(|| named(&PAD_NAMES)),
            tokenizer: path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned()),
            ..TokenInfo::for_vocab(vocab_size)
        };
        if options.append_eos && info.eos_id.is_none() {
            return Err(refuse(format!(
                "no EOS token to append: none of {EOS_NAMES:?} is in the vocabulary; give its id"
            )));
        }
        info.check(path).map_err(|e| refuse(e.to_string()))?;
        Ok(Self {
            tokenizer,
            add_special_tokens: options.add_special_tokens,
            append_eos: options.append_eos,
            info,
            path: path.to_path_buf(),
        })
    }

    /// The token info of the caches it writes.
    pub fn info(&self) -> &TokenInfo {
        &self.info
    }

    /// Replaces `out` with the ids of `text` (and the EOS id, when appended).
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        let encoding = self
            .tokenizer
            .encode_fast(text, self.add_special_tokens)
            .map_err(|e| e.to_string())?;
        out.clear();
        out.extend_from_slice(encoding.get_ids());
        if let Some(eos) = self.info.eos_id.filter(|_| self.append_eos) {
            out.push(eos);
        }
        Ok(())
    }
}

/// The cache schema of a token input: `n_tokens` first, then the metadata columns; a metadata
/// column of that name is refused (`input` names the first file).
pub(crate) fn token_schema(
    metadata: &[(String, ColumnType, bool)],
    input: &str,
) -> Result<Schema, PackError> {
    if metadata.iter().any(|(name, _, _)| name == N_TOKENS_COLUMN) {
        return Err(PackError::Column {
            input: input.to_owned(),
            column: N_TOKENS_COLUMN.to_owned(),
            reason: "a token cache's own column; leave it out with the metadata column list".into(),
        });
    }
    let columns = std::iter::once(Column::new(N_TOKENS_COLUMN, ColumnType::Int64, false))
        .chain(
            metadata
                .iter()
                .map(|(name, ty, nullable)| Column::new(name.clone(), *ty, *nullable)),
        )
        .collect();
    Schema::new(columns).map_err(|e| PackError::Input {
        input: input.to_owned(),
        reason: e.to_string(),
    })
}

/// The integer type of a token list column's values, or `None` when it is not a list of
/// integers.
pub(crate) fn list_value_type(ty: &DataType) -> Option<&DataType> {
    let inner = match ty {
        DataType::List(field) | DataType::LargeList(field) => field.data_type(),
        DataType::FixedSizeList(field, _) => field.data_type(),
        _ => return None,
    };
    inner.is_integer().then_some(inner)
}

/// The width a list of `value_type` integers gets when none is given.
pub(crate) fn default_dtype(value_type: &DataType) -> TokenDtype {
    match value_type {
        DataType::Int8 | DataType::Int16 | DataType::UInt8 | DataType::UInt16 => TokenDtype::U16,
        _ => TokenDtype::U32,
    }
}

/// One batch's token list column: each row's range in the values.
pub(crate) struct TokenLists<'a> {
    ranges: ListRanges<'a>,
    values: &'a dyn Array,
    nulls: Option<&'a arrow_buffer::NullBuffer>,
}

enum ListRanges<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
    Fixed(&'a arrow_array::FixedSizeListArray),
}

impl<'a> TokenLists<'a> {
    /// The lists of `array` (a list column of integers, checked at scan).
    pub(crate) fn of(array: &'a dyn Array) -> Option<Self> {
        let (ranges, values) = match array.data_type() {
            DataType::List(_) => {
                let list = array.as_list::<i32>();
                (
                    ListRanges::Small(list.value_offsets()),
                    list.values().as_ref(),
                )
            }
            DataType::LargeList(_) => {
                let list = array.as_list::<i64>();
                (
                    ListRanges::Large(list.value_offsets()),
                    list.values().as_ref(),
                )
            }
            DataType::FixedSizeList(_, _) => {
                let list = array.as_fixed_size_list();
                (ListRanges::Fixed(list), list.values().as_ref())
            }
            _ => return None,
        };
        values.data_type().is_integer().then_some(Self {
            ranges,
            values,
            nulls: array.nulls(),
        })
    }

    /// Whether row `row`'s list is null.
    pub(crate) fn is_null(&self, row: usize) -> bool {
        self.nulls.is_some_and(|n| n.is_null(row))
    }

    fn range(&self, row: usize) -> Range<usize> {
        let to_usize = |v: i64| usize::try_from(v).unwrap_or(0);
        match self.ranges {
            ListRanges::Small(offsets) => {
                to_usize(offsets[row].into())..to_usize(offsets[row + 1].into())
            }
            ListRanges::Large(offsets) => to_usize(offsets[row])..to_usize(offsets[row + 1]),
            ListRanges::Fixed(list) => {
                let start = list.value_offset_at(row);
                start..start + to_usize(list.value_length().into())
            }
        }
    }

    /// Replaces `out` with row `row`'s ids laid out by `encoder`. The ids that do not fit
    /// (or a null id) are refused: `(position, value)`.
    pub(crate) fn encode(
        &self,
        row: usize,
        encoder: &TokenEncoder,
        out: &mut Vec<u8>,
    ) -> Result<usize, (usize, String)> {
        let range = self.range(row);
        if let Some(nulls) = self.values.nulls() {
            if let Some(at) = range.clone().find(|&i| nulls.is_null(i)) {
                return Err((at - range.start, "null".into()));
            }
        }
        let len = range.len();
        let done = match self.values.data_type() {
            DataType::Int8 => encode_as::<Int8Type>(self.values, range, encoder, out),
            DataType::Int16 => encode_as::<Int16Type>(self.values, range, encoder, out),
            DataType::Int32 => encode_as::<Int32Type>(self.values, range, encoder, out),
            DataType::Int64 => encode_as::<Int64Type>(self.values, range, encoder, out),
            DataType::UInt8 => encode_as::<UInt8Type>(self.values, range, encoder, out),
            DataType::UInt16 => encode_as::<UInt16Type>(self.values, range, encoder, out),
            DataType::UInt32 => encode_as::<UInt32Type>(self.values, range, encoder, out),
            DataType::UInt64 => encode_as::<UInt64Type>(self.values, range, encoder, out),
            other => return Err((0, format!("of type {other}"))),
        };
        done.map(|()| len)
            .map_err(|bad| (bad.position, bad.id.to_string()))
    }
}

fn encode_as<T: ArrowPrimitiveType>(
    values: &dyn Array,
    range: Range<usize>,
    encoder: &TokenEncoder,
    out: &mut Vec<u8>,
) -> Result<(), dsrt_tokens::BadTokenId>
where
    T::Native: TokenId,
{
    let values = values.as_primitive::<T>().values();
    encoder.encode(&values[range], out)
}
