//! Megatron-LM indexed datasets (`PREFIX.idx` + `PREFIX.bin`, the `MMIDIDX` format of
//! megatron-core's `IndexedDatasetBuilder`) into token caches, one sample per document.
//!
//! `PREFIX.idx`, little-endian: the 9 bytes `MMIDIDX\0\0`, a `u64` version (1), a `u8` dtype
//! code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16), a `u64`
//! sequence count `S`, a `u64` count `D` of document indices, then `S` `i32` sequence lengths
//! (in elements), `S` `i64` sequence pointers (byte offsets into `PREFIX.bin`) and `D` `i64`
//! document indices: `0`, then after each document the number of sequences written so far, so
//! document `d` is sequences `doc[d]..doc[d + 1]`. **Decision:** a document is the
//! concatenation of its sequences in order (what `end_document` closes; `preprocess_data.py`
//! writes one sequence per document, or one per sentence with `--split-sentences`), and
//! becomes one sample; a document with no sequence is an empty document. Sequences after the
//! last document end belong to no document: refused rather than dropped or guessed at. An index
//! carrying sequence modes (a multimodal dataset) is refused.
//!
//! Every count, length and pointer is untrusted: the index's size must be exactly what its
//! header's counts say before anything else is read, each document's sequence range and each
//! sequence's bytes are checked against the counts and `PREFIX.bin`'s size before they are
//! read, and nothing is allocated from a count that a file's size has not bounded.

use crate::{Convert, Emit, PackError};
use dsrt_schema::{Schema, Value};
use dsrt_tokens::{TokenDtype, TokenEncoder, TokenInfo, TOKENS_KEY};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 9] = b"MMIDIDX\x00\x00";
/// Magic, version, dtype code, sequence count, document index count.
const HEADER_SIZE: usize = 9 + 8 + 1 + 8 + 8;
const HEADER_LEN: u64 = HEADER_SIZE as u64;
/// Documents per unit of parallel work.
const UNIT_DOCUMENTS: u64 = 512;

/// The integer type of a Megatron dataset's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    U8,
    I8,
    I16,
    I32,
    I64,
    U16,
}

impl Element {
    fn of_code(code: u8) -> Result<Self, String> {
        Ok(match code {
            1 => Self::U8,
            2 => Self::I8,
            3 => Self::I16,
            4 => Self::I32,
            5 => Self::I64,
            8 => Self::U16,
            6 | 7 => {
                return Err(format!(
                    "dtype code {code} ({}): floating-point elements are not token ids",
                    if code == 6 { "float64" } else { "float32" }
                ))
            }
            other => return Err(format!("unknown dtype code {other}")),
        })
    }

    fn size(self) -> u64 {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 => 4,
            Self::I64 => 8,
        }
    }

    /// The cache width when none is given: `uint16` for elements that always fit it.
    fn default_dtype(self) -> TokenDtype {
        match self {
            Self::U8 | Self::I8 | Self::I16 | Self::U16 => TokenDtype::U16,
            Self::I32 | Self::I64 => TokenDtype::U32,
        }
    }
}

/// A run of documents: one unit of parallel work.
#[derive(Debug, Clone, Copy)]
pub struct MegatronUnit {
    first: u64,
    count: u64,
}

/// A Megatron-LM indexed dataset opened for packing into a token cache (see the module's
/// page for the format and the decisions): its header and sizes checked, its documents cut
/// into units; the samples are its documents in order, with the metadata column `n_tokens`.
#[derive(Debug)]
pub struct Megatron {
    idx_path: PathBuf,
    bin_path: PathBuf,
    element: Element,
    sequences: u64,
    documents: u64,
    bin_len: u64,
    units: Vec<MegatronUnit>,
    info: TokenInfo,
    schema: Schema,
}

impl Megatron {
    /// Opens `PREFIX.idx` and `PREFIX.bin` and checks the index's header, its size against
    /// its counts, its first and last document index. `info` sets the cache's token info;
    /// without it the width follows the element type (`uint16` for 8- and 16-bit elements,
    /// else `uint32`) and nothing else is known.
    pub fn open(prefix: &Path, info: Option<TokenInfo>) -> Result<Self, PackError> {
        let with = |ext: &str| {
            let mut name = prefix.as_os_str().to_owned();
            name.push(ext);
            PathBuf::from(name)
        };
        let (idx_path, bin_path) = (with(".idx"), with(".bin"));
        let bad = |reason: String| PackError::Input {
            input: idx_path.display().to_string(),
            reason,
        };
        let idx = File::open(&idx_path).map_err(PackError::io(&idx_path, "open"))?;
        let idx_len = idx
            .metadata()
            .map_err(PackError::io(&idx_path, "stat"))?
            .len();
        let bin_len = std::fs::metadata(&bin_path)
            .map_err(PackError::io(&bin_path, "stat"))?
            .len();
        if idx_len < HEADER_LEN {
            return Err(bad(format!(
                "{idx_len} bytes, shorter than the {HEADER_LEN}-byte header"
            )));
        }
        let mut header = [0u8; HEADER_SIZE];
        idx.read_exact_at(&mut header, 0)
            .map_err(PackError::io(&idx_path, "read header"))?;
        if &header[..9] != MAGIC {
            return Err(bad(format!(
                "does not start with MMIDIDX\\0\\0 (found {:?}): not a Megatron-LM indexed dataset",
                String::from_utf8_lossy(&header[..9])
            )));
        }
        let u64_at = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(bytes)
        };
        let version = u64_at(9);
        if version != 1 {
            return Err(bad(format!("index version {version}; this reader knows 1")));
        }
        let element = Element::of_code(header[17]).map_err(bad)?;
        let (sequences, document_indices) = (u64_at(18), u64_at(26));
        let expected = sequences
            .checked_mul(12)
            .and_then(|s| {
                document_indices
                    .checked_mul(8)
                    .and_then(|d| s.checked_add(d))
            })
            .and_then(|body| body.checked_add(HEADER_LEN));
        match expected {
            Some(len) if len == idx_len => {}
            Some(len) if len.checked_add(sequences) == Some(idx_len) => {
                return Err(bad(
                    "the index carries sequence modes (a multimodal dataset), which this \
                     importer does not take"
                        .into(),
                ))
            }
            _ => {
                return Err(bad(format!(
                    "{idx_len} bytes, but its header counts {sequences} sequences and \
                     {document_indices} document indices ({} bytes)",
                    expected.map_or_else(|| "more than 2^64".to_owned(), |l| l.to_string())
                )))
            }
        }
        if document_indices == 0 {
            return Err(bad("no document index (not even the leading 0)".into()));
        }
        let this = Self {
            idx_path: idx_path.clone(),
            bin_path,
            element,
            sequences,
            documents: document_indices - 1,
            bin_len,
            units: Vec::new(),
            info: info.unwrap_or_else(|| TokenInfo::new(element.default_dtype())),
            schema: crate::tokens::token_schema(&[], &idx_path.display().to_string())?,
        };
        let first = this.document_index(&idx, 0)?;
        let last = this.document_index(&idx, this.documents)?;
        if first != 0 {
            return Err(bad(format!("the first document index is {first}, not 0")));
        }
        if last != sequences {
            return Err(bad(format!(
                "the last document ends at sequence {last}, but there are {sequences} \
                 sequences: those after it belong to no document"
            )));
        }
        let units = (0..this.documents.div_ceil(UNIT_DOCUMENTS))
            .map(|k| MegatronUnit {
                first: k * UNIT_DOCUMENTS,
                count: UNIT_DOCUMENTS.min(this.documents - k * UNIT_DOCUMENTS),
            })
            .collect();
        Ok(Self { units, ..this })
    }

    /// Documents: the samples it makes.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// Sequences in all.
    pub fn sequences(&self) -> u64 {
        self.sequences
    }

    /// The cache's schema: `n_tokens` alone.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The token info of the cache it writes.
    pub fn token_info(&self) -> &TokenInfo {
        &self.info
    }

    fn lengths_at(&self) -> u64 {
        HEADER_LEN
    }

    fn pointers_at(&self) -> u64 {
        HEADER_LEN + 4 * self.sequences
    }

    fn documents_at(&self) -> u64 {
        HEADER_LEN + 12 * self.sequences
    }

    fn read_error(&self, what: &'static str) -> impl FnOnce(std::io::Error) -> PackError + '_ {
        PackError::io(&self.idx_path, what)
    }

    fn document_index(&self, idx: &File, document: u64) -> Result<u64, PackError> {
        let mut bytes = [0u8; 8];
        idx.read_exact_at(&mut bytes, self.documents_at() + 8 * document)
            .map_err(self.read_error("read document index"))?;
        let value = i64::from_le_bytes(bytes);
        u64::try_from(value).map_err(|_| PackError::Input {
            input: self.idx_path.display().to_string(),
            reason: format!("document index {document} is {value}"),
        })
    }

    fn refuse(&self, document: u64, reason: String) -> PackError {
        PackError::Input {
            input: self.document_name(document),
            reason,
        }
    }

    fn document_name(&self, document: u64) -> String {
        format!("{} document {document}", self.idx_path.display())
    }
}

/// Reads `count` little-endian values of `N` bytes at `at`.
fn read_array<const N: usize>(
    file: &File,
    at: u64,
    count: usize,
    out: &mut Vec<[u8; N]>,
) -> std::io::Result<()> {
    let mut bytes = vec![0u8; count * N];
    file.read_exact_at(&mut bytes, at)?;
    out.clear();
    out.extend(bytes.chunks_exact(N).map(|c| {
        let mut value = [0u8; N];
        value.copy_from_slice(c);
        value
    }));
    Ok(())
}

macro_rules! decode_into {
    ($bytes:expr, $t:ty) => {
        $bytes
            .chunks_exact(std::mem::size_of::<$t>())
            .map(|c| {
                let mut value = [0u8; std::mem::size_of::<$t>()];
                value.copy_from_slice(c);
                <$t>::from_le_bytes(value)
            })
            .collect::<Vec<$t>>()
    };
}

impl Convert for Megatron {
    type Unit = MegatronUnit;

    fn cache_schema(&self) -> Schema {
        self.schema().clone()
    }

    fn units(&self) -> &[MegatronUnit] {
        &self.units
    }

    fn manifest_keys(&self) -> Vec<(String, serde_json::Value)> {
        vec![(TOKENS_KEY.to_owned(), self.info.to_json())]
    }

    fn convert(&self, unit: &MegatronUnit, emit: &mut Emit<'_>) -> Result<(), PackError> {
        let idx = File::open(&self.idx_path).map_err(PackError::io(&self.idx_path, "open"))?;
        let bin = File::open(&self.bin_path).map_err(PackError::io(&self.bin_path, "open"))?;
        let encoder = TokenEncoder::new(&self.info);
        let count = usize::try_from(unit.count).unwrap_or(usize::MAX);
        // Bounded by the unit's size, never by a count read from the file.
        let mut bounds: Vec<[u8; 8]> = Vec::new();
        read_array(
            &idx,
            self.documents_at() + 8 * unit.first,
            count + 1,
            &mut bounds,
        )
        .map_err(self.read_error("read document indices"))?;
        let bounds: Vec<i64> = bounds.into_iter().map(i64::from_le_bytes).collect();
        let (mut lengths, mut pointers): (Vec<[u8; 4]>, Vec<[u8; 8]>) = (Vec::new(), Vec::new());
        let mut raw = Vec::new();
        for (k, pair) in bounds.windows(2).enumerate() {
            let document = unit.first + k as u64;
            let (start, end) = (pair[0], pair[1]);
            let range = u64::try_from(start)
                .ok()
                .zip(u64::try_from(end).ok())
                .filter(|(s, e)| s <= e && *e <= self.sequences)
                .ok_or_else(|| {
                    self.refuse(
                        document,
                        format!(
                            "sequences {start}..{end}: not a range within the {} sequences",
                            self.sequences
                        ),
                    )
                })?;
            // Bounded: the range lies within the sequence count the index's size vouched for.
            let n = usize::try_from(range.1 - range.0).unwrap_or(usize::MAX);
            read_array(&idx, self.lengths_at() + 4 * range.0, n, &mut lengths)
                .map_err(self.read_error("read sequence lengths"))?;
            read_array(&idx, self.pointers_at() + 8 * range.0, n, &mut pointers)
                .map_err(self.read_error("read sequence pointers"))?;
            raw.clear();
            for (s, (length, pointer)) in lengths.iter().zip(&pointers).enumerate() {
                let sequence = range.0 + s as u64;
                let length = i32::from_le_bytes(*length);
                let pointer = i64::from_le_bytes(*pointer);
                let span = u64::try_from(length)
                    .ok()
                    .and_then(|l| l.checked_mul(self.element.size()))
                    .zip(u64::try_from(pointer).ok())
                    .filter(|(bytes, at)| {
                        at.checked_add(*bytes).is_some_and(|e| e <= self.bin_len)
                    });
                let Some((bytes, at)) = span else {
                    return Err(self.refuse(
                        document,
                        format!(
                            "sequence {sequence}: {length} elements at byte {pointer} lie \
                             outside {} ({} bytes)",
                            self.bin_path.display(),
                            self.bin_len
                        ),
                    ));
                };
                let from = raw.len();
                raw.resize(from + usize::try_from(bytes).unwrap_or(usize::MAX), 0);
                bin.read_exact_at(&mut raw[from..], at)
                    .map_err(PackError::io(&self.bin_path, "read"))?;
            }
            let mut payload = Vec::new();
            let encoded = match self.element {
                Element::U8 => encoder.encode(&raw, &mut payload),
                Element::I8 => encoder.encode(&decode_into!(raw, i8), &mut payload),
                Element::I16 => encoder.encode(&decode_into!(raw, i16), &mut payload),
                Element::U16 => encoder.encode(&decode_into!(raw, u16), &mut payload),
                Element::I32 => encoder.encode(&decode_into!(raw, i32), &mut payload),
                Element::I64 => encoder.encode(&decode_into!(raw, i64), &mut payload),
            };
            encoded.map_err(|bad| {
                PackError::token_out_of_range(self.document_name(document), bad, &self.info)
            })?;
            let n_tokens = raw.len() as u64 / self.element.size();
            emit.sample(
                || self.document_name(document),
                payload,
                vec![Value::Int64(i64::try_from(n_tokens).unwrap_or(i64::MAX))],
            )?;
        }
        Ok(())
    }
}
