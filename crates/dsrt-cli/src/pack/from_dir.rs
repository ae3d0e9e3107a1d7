//! `dsrt pack --from-dir` and `--from-imagefolder`: directory trees through the parallel
//! packer (`datasetrt::pack`), with a progress bar; [`Run`] is how every converter runs.

use super::target::OutputDir;
use super::{PackTarget, TreeInput};
use crate::error::CliError;
use crate::progress::Progress;
use datasetrt::pack::{
    pack as pack_parallel, CancelToken, Convert, FileTree, ImageFolder, PackOptions,
};
use datasetrt::{CacheSummary, Schema};
use std::sync::OnceLock;

/// Scans `input` and packs it into `out` on `jobs` threads.
pub(crate) fn pack(
    input: TreeInput<'_>,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<CacheSummary, CliError> {
    let run = Run::new(target, jobs)?;
    match input {
        TreeInput::Files(dir) => {
            let tree = FileTree::scan(dir)?;
            run.pack(&tree, FileTree::schema(), Some(tree.len() as u64), out)
        }
        TreeInput::ImageFolder(dir) => {
            let folder = ImageFolder::scan(dir)?;
            run.pack(
                &folder,
                ImageFolder::schema(),
                Some(folder.len() as u64),
                out,
            )
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
        schema: Schema,
        total: Option<u64>,
        out: OutputDir,
    ) -> Result<CacheSummary, CliError> {
        out.write(self.target, schema, |writer| {
            let progress = Progress::samples("packing", total);
            let advance = |_: u64| progress.inc();
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
