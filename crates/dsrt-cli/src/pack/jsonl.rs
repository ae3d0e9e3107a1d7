//! `dsrt pack --jsonl`: the input named on the command line, scanned and packed by
//! `datasetrt::pack::Jsonl` (the converter the Python package's `pack_jsonl` runs too), with a
//! progress bar while the schema is inferred.

use super::from_dir::Run;
use super::target::OutputDir;
use super::PackTarget;
use crate::error::CliError;
use crate::progress::Progress;
use clap::ValueEnum;
use datasetrt::pack::{Jsonl, JsonlOptions, JsonlSource, PayloadEncoding};
use datasetrt::CacheSummary;
use std::path::PathBuf;

/// What `dsrt pack --jsonl` packs.
#[derive(Debug)]
pub(crate) struct JsonlJob {
    /// Where the lines come from.
    pub(crate) input: JsonlInput,
    /// The payload field, its encoding, and the schema when one was given.
    pub(crate) options: JsonlOptions,
    /// Whether the schema is inferred (none was given).
    pub(crate) infer: bool,
}

/// Where the lines come from.
#[derive(Debug)]
pub(crate) enum JsonlInput {
    /// A file.
    File(PathBuf),
    /// Standard input, spooled to a temporary file (it is read twice).
    Stdin,
    /// Text compiled into the binary (`dsrt demo`).
    Embedded {
        /// The name messages use.
        name: &'static str,
        /// The lines.
        text: &'static str,
    },
}

/// `--payload-encoding` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PayloadEncodingArg {
    /// A file path, relative to the JSONL file's directory; the file's bytes are the payload.
    Path,
    /// Inline standard base64 (padding optional).
    Base64,
    /// The string's own UTF-8 bytes.
    Text,
}

impl From<PayloadEncodingArg> for PayloadEncoding {
    fn from(value: PayloadEncodingArg) -> Self {
        match value {
            PayloadEncodingArg::Path => Self::Path,
            PayloadEncodingArg::Base64 => Self::Base64,
            PayloadEncodingArg::Text => Self::Text,
        }
    }
}

/// Scans the input (inferring the schema unless one was given) and packs it on `jobs` threads,
/// in line order: the cache is the same for every `jobs`.
pub(crate) fn pack(
    job: JsonlJob,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<CacheSummary, CliError> {
    let source = match job.input {
        JsonlInput::File(path) => JsonlSource::File(path),
        JsonlInput::Stdin => JsonlSource::spool("<stdin>", std::io::stdin().lock())?,
        JsonlInput::Embedded { name, text } => JsonlSource::Text {
            name: name.to_owned(),
            text: text.into(),
        },
    };
    let progress = job
        .infer
        .then(|| Progress::samples("inferring schema", None));
    let jsonl = Jsonl::scan(source, job.options, &|lines| {
        if let Some(progress) = &progress {
            progress.set(lines);
        }
    })?;
    if let Some(progress) = progress {
        progress.finish();
    }
    Run::new(target, jobs)?.pack(&jsonl, jsonl.len(), out)
}
