//! `dsrt pack --from-dir`, `--from-imagefolder`, `--from-parquet` and `--from-webdataset`:
//! inputs through the parallel packer (`datasetrt::pack`), with a progress bar; [`Run`] is how
//! every converter runs.

use super::target::OutputDir;
use super::{PackTarget, ParallelInput};
use crate::error::CliError;
use crate::output::warn;
use crate::progress::Progress;
use datasetrt::pack::{
    pack as pack_parallel, CancelToken, Convert, FileTree, ImageFolder, Megatron, PackOptions,
    Tables, WebDataset,
};
use datasetrt::CacheSummary;
use std::sync::OnceLock;

/// Skipped samples named on stderr one by one; past these only the summary counts them.
const SKIPS_NAMED: usize = 10;

/// What a run wrote, and the input samples it left out (`--skip-bad`).
pub(crate) struct Packed {
    pub(crate) summary: CacheSummary,
    /// `None` for inputs that never skip a sample.
    pub(crate) skipped: Option<u64>,
}

/// Scans `input` and packs it into `out` on `jobs` threads.
pub(crate) fn pack(
    input: ParallelInput<'_>,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<Packed, CliError> {
    let run = Run::new(target, jobs)?;
    let packed = |summary| Packed {
        summary,
        skipped: None,
    };
    match input {
        ParallelInput::Files(dir) => {
            let tree = FileTree::scan(dir)?;
            run.pack(&tree, Some(tree.len() as u64), out).map(packed)
        }
        ParallelInput::ImageFolder(dir) => {
            let folder = ImageFolder::scan(dir)?;
            run.pack(&folder, Some(folder.len() as u64), out)
                .map(packed)
        }
        ParallelInput::Tables(paths, options) => {
            let tables = Tables::scan(paths, &options)?;
            run.pack(&tables, tables.len(), out).map(packed)
        }
        ParallelInput::Megatron(prefix, info) => {
            let megatron = Megatron::open(prefix, info)?;
            run.pack(&megatron, Some(megatron.documents()), out)
                .map(packed)
        }
        ParallelInput::WebDataset(tars, options) => {
            let shards = WebDataset::scan(tars, options)?;
            for skip in shards.skipped().iter().take(SKIPS_NAMED) {
                warn(format_args!(
                    "{}: skipped sample {:?}: {}",
                    skip.input, skip.key, skip.reason
                ));
            }
            let summary = run.pack(&shards, Some(shards.len()), out)?;
            Ok(Packed {
                summary,
                skipped: Some(shards.skipped().len() as u64),
            })
        }
    }
}

/// How a converter is packed, whatever it reads: on `jobs` threads, with a progress bar, and
/// stopped by Ctrl-C.
pub(crate) struct Run<'a> {
    target: &'a PackTarget,
    jobs: Option<usize>,
    cancel: CancelToken,
}

impl<'a> Run<'a> {
    /// Ctrl-C stops the workers and removes the partial cache (exit 130) instead of killing
    /// the process with it half written. The handler is installed once per process (only
    /// `migrate` installs another, and a process runs one command).
    pub(crate) fn new(target: &'a PackTarget, jobs: Option<usize>) -> Result<Self, CliError> {
        static INTERRUPTED: OnceLock<CancelToken> = OnceLock::new();
        let cancel = match INTERRUPTED.get() {
            Some(token) => token.clone(),
            None => {
                let token = CancelToken::new();
                let handler_token = token.clone();
                ctrlc::set_handler(move || handler_token.cancel()).map_err(|e| {
                    CliError::Invalid(format!("installing the Ctrl-C handler: {e}"))
                })?;
                INTERRUPTED.get_or_init(|| token).clone()
            }
        };
        Ok(Self {
            target,
            jobs,
            cancel,
        })
    }

    /// Packs `convert` (`total` samples, when known) into `out`.
    pub(crate) fn pack<C: Convert>(
        &self,
        convert: &C,
        total: Option<u64>,
        out: OutputDir,
    ) -> Result<CacheSummary, CliError> {
        let writer_options = convert.writer_options(|schema| self.target.writer_options(schema));
        out.write(writer_options, |writer| {
            let progress = Progress::samples("packing", total);
            let advance = |samples: u64| progress.set(samples);
            let mut options = PackOptions::default()
                .progress(&advance)
                .cancel(self.cancel.clone());
            if let Some(jobs) = self.jobs {
                options = options.jobs(jobs);
            }
            pack_parallel(convert, writer, &options)?;
            progress.finish();
            Ok(())
        })
    }
}
