//! Converters from the forms training data comes in into DatasetRT caches, run in parallel with
//! output identical for every number of jobs.
//!
//! What it is for: [`pack`] runs a [`Convert`] (a list of input units, each turned into
//! samples in order) on `jobs` worker threads that read and encode each sample
//! ([`dsrt_writer::SampleEncoder`]: metadata check, envelope, compression) while the calling
//! thread appends them in input order, so the cache is byte for byte the one a single job
//! writes, and no file of it names a job. The converters of file trees ([`FileTree`]: one
//! sample per regular file) and of ImageFolder layouts ([`ImageFolder`]: `root/<class>/<file>`)
//! live here, as do those of tables ([`Tables`]: Parquet files and Hugging Face `save_to_disk`
//! datasets, one sample per row) and of WebDataset tar shards ([`WebDataset`]: one sample per
//! key). Token inputs write token caches (`dsrt-tokens`): [`TableOptions::tokens`] takes a
//! list column of ids or a text column tokenized in the workers ([`TextTokenizer`], the Hugging
//! Face `tokenizers` crate), and [`Megatron`] imports a Megatron-LM indexed dataset, one sample
//! per document. JSONL ([`Jsonl`]: one sample per line, its payload a path, base64 or text,
//! the other fields metadata typed by inference) is converted here too, so the `dsrt pack`
//! command and the Python package's `pack_*` functions run the same converters.
//!
//! What it is not for: the cache format (`dsrt-writer` writes it) or where the output goes (a
//! directory or a store prefix: the caller's; a local one is written by
//! `dsrt_writer::write_new_cache`, which removes what a failed run left).
//!
//! Layering: above `dsrt-writer` and `dsrt-tokens`; re-exported by the `datasetrt` facade (`datasetrt::pack`),
//! used by the `dsrt` CLI and the Python package.
#![forbid(unsafe_code)]

mod error;
mod hf;
mod jsonl;
mod megatron;
mod parquet;
mod pipeline;
mod planned;
mod table;
mod tokens;
mod tree;
mod unit_queue;
mod webdataset;

pub use durable_fs::CancelToken;
pub use error::PackError;
pub use jsonl::{Jsonl, JsonlOptions, JsonlSource, LineChunk, PayloadEncoding};
pub use megatron::{Megatron, MegatronUnit};
pub use pipeline::{pack, writer_io_threads, Convert, Emit, PackOptions, PackStats};
pub use planned::{PlanAhead, PlannedSampleFn};
pub use table::{table_schema, TableOptions, TableUnit, Tables};
pub use tokens::{TextOptions, TextTokenizer, TokenColumn};
pub use tree::{list_files, FileTree, ImageFolder};
pub use webdataset::{SkippedSample, WebDataset, WebDatasetOptions};
