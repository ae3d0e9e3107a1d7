//! `dsrt pack`: a JSONL file (one sample per line), a directory tree (one sample per file),
//! Parquet files or a Hugging Face dataset (one sample per row) or WebDataset tars (one sample
//! per key) into a new cache, with a progress bar on a terminal and a summary at the end.

mod from_dir;
mod jsonl;
mod remote_out;
mod summary;
mod target;

pub(crate) use jsonl::{JsonlInput, JsonlJob, PayloadEncodingArg};
pub(crate) use summary::PackReport;

use crate::byte_size::parse_byte_size;
use crate::error::CliError;
use crate::output::{print, print_json};
use clap::{ArgGroup, Args, ValueEnum};
use datasetrt::pack::{
    JsonlOptions, TableOptions, TextOptions, TextTokenizer, TokenColumn, WebDatasetOptions,
};
use datasetrt::tokens::{TokenDtype, TokenInfo};
use datasetrt::{CompressionAlgo, Schema, WriterOptions, DEFAULT_MAX_SHARD_BYTES};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `dsrt pack`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["jsonl", "from_dir", "from_imagefolder", "from_parquet", "from_webdataset", "from_megatron"])))]
#[command(group(ArgGroup::new("table_column").args(["payload_column", "tokens_column", "text_column"])))]
#[command(group(ArgGroup::new("jsonl_field").args(["payload_field", "tokens_column", "text_column"])))]
#[command(after_help = "\
JSONL input: one JSON object per line (blank lines are skipped). The payload field holds a
file path relative to the JSONL file's directory (the current directory for stdin), inline
base64, or inline text, as --payload-encoding says. Every other field is a metadata column.
Without --schema, column types are inferred over the whole file: true/false -> bool,
integers -> int64, numbers with a fraction or exponent (or integers mixed with them) ->
float64, strings -> utf8; a column that is null or missing on some line is nullable. Nested
values and mixed types are errors naming the line and the field. A file is read twice
(infer, then write), so memory stays bounded; stdin is spooled to a temporary file.

Directory input: one sample per regular file below DIR, in sorted relative-path order,
with metadata columns `path` (relative, utf8) and `size` (int64). Symbolic links are skipped.

ImageFolder input: DIR/<class>/<file> (torchvision's layout; files may sit in subdirectories
of a class). One sample per file, classes in sorted order, files in sorted path order within
a class; metadata `label` (int64: the class's position), `class` (utf8) and `path` (utf8,
relative to DIR). A file directly in DIR is refused.

Parquet input: --from-parquet FILE_OR_DIR... (a directory: its *.parquet files in name order),
one sample per row, files in the order given. --payload-column COL (binary, large_binary,
string, or a struct with a binary `bytes` field as Hugging Face's Image and Audio features
store) is the payload; the other columns, or those --metadata-columns a,b names in that
order, are metadata: bool -> bool; int8..int64, uint8..uint32 -> int64; uint64 -> int64 (a
value above 2^63-1 is refused naming its row); float16..float64 -> float64; string and
dictionary-of-string -> utf8; nullable as the files declare. Any other type (list, struct,
map, binary, decimal, date, timestamp) is refused naming the file and the column before
anything is written: leave it out with --metadata-columns. Row groups are read one at a time.

Hugging Face input: a directory given to --from-parquet that holds state.json is a
Dataset.save_to_disk directory: its data-*.arrow files (Arrow IPC streams, in state.json's
_data_files order) are read as above. A DatasetDict directory (dataset_dict.json) is refused:
pass one split's directory. A dataset exported with to_parquet is plain Parquet.

WebDataset input: --from-webdataset TAR... (uncompressed tars, in the order given). Members
sharing a key (the path up to the first dot of the file name) are one sample; the member with
the first of --payload-ext jpg,png,... the sample has is the payload. Metadata: `key` (utf8);
`cls` (int64) from .cls; `txt` (utf8) from .txt; and each field of a .json object whose values
are null, bool, number or string (integers and numbers mixed widen to float64; other mixes are
refused naming the tar, the key and the field). Other members are ignored. A sample with no
payload member, a .cls that is not an integer, or a .json field that is an array or an object
is refused naming the tar and the key, or left out with --skip-bad and counted in the
summary. The tars are read twice: once for the schema (seeking past payloads), then packed.

--jobs N (default: the CPUs available) reads and encodes (compresses, checks) on N threads for
every input: JSONL lines (and the payload files they name) in runs of 256, directory and
ImageFolder files in runs of 32, Parquet row groups, Hugging Face data files, WebDataset tars;
the cache is byte for byte the same for every N.

The summary goes to stdout (one JSON object with --json); the progress bar goes to stderr,
only when stderr is a terminal. On failure the partly written cache is removed.

A URL --out (s3://bucket/prefix, gs://, az://; configured by the usual AWS_*, GOOGLE_*,
AZURE_* variables) packs into a temporary directory (under TMPDIR; it needs room for the
cache), then uploads every shard, index.bin and metadata.arrow, and manifest.json last, only
if the prefix holds none: no reader sees the cache before it is complete. A prefix holding
anything is refused before any input is read; after a failed upload (no manifest.json, so no
cache) rerun with --overwrite-partial to replace the objects it left.

Examples:
  dsrt pack --jsonl train.jsonl --payload-field image --out train.cache --source train
  dsrt pack --jsonl - --payload-field text --payload-encoding text --out c/ --source s < in.jsonl
  dsrt pack --jsonl x.jsonl --payload-field blob --payload-encoding base64 \\
            --schema schema.json --compression lz4 --max-shard-bytes 64MiB --out c/ --source x
  dsrt pack --from-dir images/ --out images.cache --source images --json
  dsrt pack --from-imagefolder imagenet/train --out train.cache --source imagenet-train --jobs 8
  dsrt pack --from-parquet data/train/ --payload-column image --metadata-columns label,caption \
            --out train.cache --source laion-subset --jobs 8
  dsrt pack --from-parquet hf/mnist-train --payload-column image --out mnist.cache --source mnist
  dsrt pack --from-webdataset shards/shard-000000.tar shards/shard-000001.tar \
            --payload-ext jpg,png --skip-bad --out wds.cache --source cc3m
  dsrt pack --jsonl train.jsonl --payload-field image --out s3://bucket/caches/train --source train")]
pub(crate) struct PackArgs {
    /// JSONL file to pack, one sample per line; `-` reads stdin.
    #[arg(long, value_name = "FILE", requires = "jsonl_field")]
    jsonl: Option<PathBuf>,
    /// Directory whose regular files become the samples, recursively.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["payload_field", "schema", "payload_encoding"])]
    from_dir: Option<PathBuf>,
    /// ImageFolder directory (DIR/<class>/<file>) whose files become labelled samples.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["payload_field", "schema", "payload_encoding"])]
    from_imagefolder: Option<PathBuf>,
    /// Parquet files, directories of them, or a Hugging Face save_to_disk directory: one
    /// sample per row.
    #[arg(long, value_name = "FILE_OR_DIR", num_args = 1.., requires = "table_column",
          conflicts_with_all = ["payload_field", "schema", "payload_encoding"])]
    from_parquet: Option<Vec<PathBuf>>,
    /// A Megatron-LM indexed dataset, PREFIX.idx and PREFIX.bin: a token cache, one sample
    /// per document.
    #[arg(long, value_name = "PREFIX",
          conflicts_with_all = ["payload_field", "schema", "payload_encoding", "table_column", "tokenizer"])]
    from_megatron: Option<PathBuf>,
    /// Write a token cache whose documents are this column's (Parquet, Hugging Face) or
    /// field's (JSONL) token ids: a list of integers.
    #[arg(long, value_name = "COL", alias = "tokens-field")]
    tokens_column: Option<String>,
    /// Write a token cache whose documents are this text column (Parquet, Hugging Face) or
    /// field (JSONL), tokenized with --tokenizer.
    #[arg(long, value_name = "COL", alias = "text-field", requires = "tokenizer")]
    text_column: Option<String>,
    /// The Hugging Face tokenizer.json that tokenizes --text-column.
    #[arg(long, value_name = "TOKENIZER.json", requires = "text_column")]
    tokenizer: Option<PathBuf>,
    /// Let the tokenizer add its special tokens (BOS, [CLS] ... [SEP]), as the Python
    /// tokenizers package's add_special_tokens=True.
    #[arg(long, requires = "tokenizer")]
    add_special_tokens: bool,
    /// End every tokenized document with the EOS id.
    #[arg(long, requires = "tokenizer")]
    append_eos: bool,
    /// The vocabulary size of a token cache (every id must be below it; picks uint16 when
    /// it has at most 65,536 ids).
    #[arg(long, value_name = "N", conflicts_with = "tokenizer")]
    vocab_size: Option<u64>,
    /// The id width of a token cache (default: from --vocab-size, else from the input's
    /// integer type; uint32 for JSONL).
    #[arg(long, value_enum, value_name = "DTYPE", conflicts_with = "tokenizer")]
    token_dtype: Option<TokenDtypeArg>,
    /// A token cache's BOS id (with --tokenizer: default the tokenizer's).
    #[arg(long, value_name = "ID")]
    bos_id: Option<u32>,
    /// A token cache's EOS id (with --tokenizer: default the tokenizer's).
    #[arg(long, value_name = "ID")]
    eos_id: Option<u32>,
    /// A token cache's pad id (with --tokenizer: default the tokenizer's).
    #[arg(long, value_name = "ID")]
    pad_id: Option<u32>,
    /// The tokenizer's name a token cache records (with --tokenizer: its file name).
    #[arg(long, value_name = "NAME", conflicts_with = "tokenizer")]
    tokenizer_name: Option<String>,
    /// Column holding each row's payload (Parquet and Hugging Face input).
    #[arg(long, value_name = "COL", requires = "from_parquet")]
    payload_column: Option<String>,
    /// Only these columns, in this order, become metadata (default: every column but the
    /// payload).
    #[arg(
        long,
        value_name = "A,B,...",
        value_delimiter = ',',
        requires = "from_parquet"
    )]
    metadata_columns: Option<Vec<String>>,
    /// WebDataset tar shards: one sample per key.
    #[arg(long, value_name = "TAR", num_args = 1.., requires = "payload_ext",
          conflicts_with_all = ["payload_field", "schema", "payload_encoding"])]
    from_webdataset: Option<Vec<PathBuf>>,
    /// Extension(s) of the payload member, the first a sample has (WebDataset input).
    #[arg(
        long,
        value_name = "EXT,...",
        value_delimiter = ',',
        requires = "from_webdataset"
    )]
    payload_ext: Option<Vec<String>>,
    /// Leave out WebDataset samples that cannot become one (counted in the summary) instead
    /// of refusing the input.
    #[arg(long, requires = "from_webdataset")]
    skip_bad: bool,
    /// Threads that read and encode samples (all input but JSONL; default: the CPUs
    /// available). The output does not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// JSONL field holding each sample's payload.
    #[arg(long, value_name = "FIELD", requires = "jsonl")]
    payload_field: Option<String>,
    /// How the payload field is read (default: path).
    #[arg(long, value_enum, value_name = "ENCODING", requires = "jsonl")]
    payload_encoding: Option<PayloadEncodingArg>,
    /// Metadata schema as a JSON array of {"name", "type", "nullable"} (the manifest's
    /// metadata_schema form) instead of inferring it.
    #[arg(long, value_name = "SCHEMA.json", requires = "jsonl")]
    schema: Option<PathBuf>,
    /// The new cache: a directory, empty or absent; or a store prefix (`s3://bucket/prefix`,
    /// `gs://`, `az://`, `file://`) that holds no cache, packed in a temporary directory and
    /// published there, manifest.json last.
    #[arg(long, value_name = "DIR|URL")]
    out: PathBuf,
    /// With a URL `--out`: publish even if the prefix holds objects but no manifest.json (what
    /// a failed publish leaves), replacing them.
    #[arg(long)]
    overwrite_partial: bool,
    /// Source name; the v3 cache id is derived from its exact bytes.
    #[arg(long, value_name = "NAME")]
    source: String,
    /// Payload compression.
    #[arg(long, value_enum, default_value_t = Compression::None)]
    compression: Compression,
    /// Shard rotation target: a byte size (64MB is 64 * 10^6 bytes, 64MiB 64 * 2^20).
    #[arg(long, value_name = "N", value_parser = parse_byte_size, default_value_t = DEFAULT_MAX_SHARD_BYTES)]
    max_shard_bytes: u64,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

/// `--compression` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Compression {
    /// Payloads stored as they are.
    None,
    /// Each payload an LZ4 block.
    Lz4,
}

impl From<Compression> for CompressionAlgo {
    fn from(value: Compression) -> Self {
        match value {
            Compression::None => Self::None,
            Compression::Lz4 => Self::Lz4,
        }
    }
}

/// `--token-dtype` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TokenDtypeArg {
    /// Little-endian u16 ids.
    Uint16,
    /// Little-endian u32 ids.
    Uint32,
}

/// Where and how a cache is written, whatever the input.
#[derive(Debug, Clone)]
pub(crate) struct PackTarget {
    /// The new cache's directory.
    pub(crate) out: PathBuf,
    /// The source name.
    pub(crate) source: String,
    /// Payload compression.
    pub(crate) compression: CompressionAlgo,
    /// Shard rotation target.
    pub(crate) max_shard_bytes: u64,
    /// For a URL `out`: replace what a failed publish left under the prefix.
    pub(crate) overwrite_partial: bool,
    /// The writer's `io_threads` (see `datasetrt::pack::writer_io_threads`).
    pub(crate) io_threads: bool,
}

impl PackTarget {
    fn writer_options(&self, schema: Schema) -> WriterOptions {
        WriterOptions::new(self.source.clone(), schema)
            .compression(self.compression)
            .max_shard_bytes(self.max_shard_bytes)
            .io_threads(self.io_threads)
    }
}

/// Runs `dsrt pack`.
pub(crate) fn run(args: &PackArgs) -> Result<(), CliError> {
    let target = PackTarget {
        out: remote_out::local_out(&args.out)?,
        source: args.source.clone(),
        compression: args.compression.into(),
        max_shard_bytes: args.max_shard_bytes,
        overwrite_partial: args.overwrite_partial,
        io_threads: datasetrt::pack::writer_io_threads(args.jobs.map(usize::from)),
    };
    let jobs = args.jobs.map(usize::from);
    if let Some(prefix) = &args.from_megatron {
        let report = pack_tree(
            ParallelInput::Megatron(prefix, token_info(args)?),
            &target,
            jobs,
        )?;
        return print_report(&report, args.json);
    }
    if let Some(paths) = &args.from_parquet {
        let mut options = match token_column(args)? {
            Some((column, tokens)) => TableOptions::tokens(column, tokens),
            None => TableOptions::new(args.payload_column.clone().unwrap_or_default()),
        };
        if let Some(columns) = &args.metadata_columns {
            options = options.metadata_columns(columns.clone());
        }
        let report = pack_tree(ParallelInput::Tables(paths, options), &target, jobs)?;
        return print_report(&report, args.json);
    }
    if let Some(tars) = &args.from_webdataset {
        let options = WebDatasetOptions::new(args.payload_ext.clone().unwrap_or_default())
            .skip_bad(args.skip_bad);
        let report = pack_tree(ParallelInput::WebDataset(tars, options), &target, jobs)?;
        return print_report(&report, args.json);
    }
    let report = match (&args.jsonl, &args.from_dir, &args.from_imagefolder) {
        (Some(file), _, _) => pack_jsonl(jsonl_job(args, file)?, &target, jobs)?,
        (None, Some(dir), _) => pack_tree(ParallelInput::Files(dir), &target, jobs)?,
        (None, None, Some(dir)) => pack_tree(ParallelInput::ImageFolder(dir), &target, jobs)?,
        (None, None, None) => {
            return Err(CliError::Invalid(
                "give --jsonl FILE, --from-dir DIR, --from-imagefolder DIR, --from-parquet \
                 FILE_OR_DIR... or --from-webdataset TAR..."
                    .into(),
            ))
        }
    };
    print_report(&report, args.json)
}

fn print_report(report: &PackReport, json: bool) -> Result<(), CliError> {
    if json {
        print_json(report)
    } else {
        print(report)
    }
}

/// The token info the flags give (`None` when neither a vocabulary size nor a width is
/// given: then the input's integer type decides the width).
fn token_info(args: &PackArgs) -> Result<Option<TokenInfo>, CliError> {
    let dtype = match (args.token_dtype, args.vocab_size) {
        (Some(TokenDtypeArg::Uint16), _) => TokenDtype::U16,
        (Some(TokenDtypeArg::Uint32), _) => TokenDtype::U32,
        (None, Some(size)) => TokenDtype::for_vocab(size),
        (None, None) => {
            let given = args.bos_id.is_some()
                || args.eos_id.is_some()
                || args.pad_id.is_some()
                || args.tokenizer_name.is_some();
            if given {
                return Err(CliError::Invalid(
                    "give --vocab-size or --token-dtype with --bos-id, --eos-id, --pad-id or \
                     --tokenizer-name"
                        .into(),
                ));
            }
            return Ok(None);
        }
    };
    let info = TokenInfo {
        dtype,
        vocab_size: args.vocab_size,
        bos_id: args.bos_id,
        eos_id: args.eos_id,
        pad_id: args.pad_id,
        tokenizer: args.tokenizer_name.clone(),
    };
    info.check(&args.out)?;
    Ok(Some(info))
}

/// `--tokens-column` or `--text-column` (with its tokenizer loaded), if given.
fn token_column(args: &PackArgs) -> Result<Option<(String, TokenColumn)>, CliError> {
    if let Some(column) = &args.tokens_column {
        return Ok(Some((column.clone(), TokenColumn::Ids(token_info(args)?))));
    }
    let (Some(column), Some(tokenizer)) = (&args.text_column, &args.tokenizer) else {
        return Ok(None);
    };
    let options = TextOptions {
        add_special_tokens: args.add_special_tokens,
        append_eos: args.append_eos,
        bos_id: args.bos_id,
        eos_id: args.eos_id,
        pad_id: args.pad_id,
    };
    let tokenizer = TextTokenizer::from_file(tokenizer, options)?;
    Ok(Some((
        column.clone(),
        TokenColumn::Text(Arc::new(tokenizer)),
    )))
}

fn jsonl_job(args: &PackArgs, file: &Path) -> Result<JsonlJob, CliError> {
    let tokens = token_column(args)?;
    let payload_field = match (&tokens, &args.payload_field) {
        (Some((field, _)), _) | (None, Some(field)) => field.clone(),
        (None, None) => {
            return Err(CliError::Invalid(
                "--jsonl needs --payload-field FIELD (or --tokens-column, --text-column)".into(),
            ))
        }
    };
    let encoding = args.payload_encoding.unwrap_or(PayloadEncodingArg::Path);
    let mut options = JsonlOptions::new(payload_field.clone()).encoding(encoding.into());
    if let Some((_, column)) = tokens {
        options = options.tokens(column);
    }
    let schema = args.schema.as_deref().map(read_schema_file).transpose()?;
    if let Some(schema) = &schema {
        if schema.position(&payload_field).is_some() {
            return Err(CliError::Invalid(format!(
                "the schema has a column {payload_field:?}, which is the payload field; metadata columns are the other fields"
            )));
        }
    }
    let infer = schema.is_none();
    if let Some(schema) = schema {
        options = options.schema(schema);
    }
    let input = match file == Path::new("-") {
        true => JsonlInput::Stdin,
        false => JsonlInput::File(file.to_path_buf()),
    };
    Ok(JsonlJob {
        input,
        options,
        infer,
    })
}

/// Packs JSONL input into `target`, timing the whole job (inference included).
pub(crate) fn pack_jsonl(
    job: JsonlJob,
    target: &PackTarget,
    jobs: Option<usize>,
) -> Result<PackReport, CliError> {
    let started = Instant::now();
    let guard = target::prepare(&target.out, target)?;
    let summary = jsonl::pack(job, target, guard, jobs)?;
    Ok(PackReport::new(&summary, target, started.elapsed()))
}

/// An input the parallel converters pack.
#[derive(Debug, Clone)]
pub(crate) enum ParallelInput<'a> {
    /// One sample per regular file (`--from-dir`).
    Files(&'a Path),
    /// `DIR/<class>/<file>` (`--from-imagefolder`).
    ImageFolder(&'a Path),
    /// Parquet files and Hugging Face datasets (`--from-parquet`).
    Tables(&'a [PathBuf], TableOptions),
    /// WebDataset tars (`--from-webdataset`).
    WebDataset(&'a [PathBuf], WebDatasetOptions),
    /// A Megatron-LM indexed dataset's prefix (`--from-megatron`) and the token info given.
    Megatron(&'a Path, Option<TokenInfo>),
}

/// Packs `input` into `target` on `jobs` threads (default: the CPUs available).
pub(crate) fn pack_tree(
    input: ParallelInput<'_>,
    target: &PackTarget,
    jobs: Option<usize>,
) -> Result<PackReport, CliError> {
    let started = Instant::now();
    let guard = target::prepare(&target.out, target)?;
    let packed = from_dir::pack(input, target, guard, jobs)?;
    Ok(PackReport::new(&packed.summary, target, started.elapsed()).skipped(packed.skipped))
}

fn read_schema_file(path: &Path) -> Result<Schema, CliError> {
    let bytes = std::fs::read(path).map_err(CliError::io(path, "read schema"))?;
    serde_json::from_slice(&bytes).map_err(|e| CliError::SchemaFile {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}
