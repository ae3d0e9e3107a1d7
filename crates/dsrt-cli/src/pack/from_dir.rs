//! `dsrt pack --from-dir` and `--from-imagefolder`: directory trees through the parallel
//! packer (`datasetrt::pack`), with a progress bar.

use super::target::OutputDir;
use super::{PackTarget, TreeInput};
use crate::error::CliError;
use crate::progress::Progress;
use datasetrt::pack::{
    pack as pack_parallel, CancelToken, Convert, FileTree, ImageFolder, PackOptions,
};
use datasetrt::{CacheSummary, Schema};

/// Scans `input` and packs it into `out` on `jobs` threads.
pub(crate) fn pack(
    input: TreeInput<'_>,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<CacheSummary, CliError> {
    // Ctrl-C stops the workers and removes the partial cache (exit 130) instead of killing the
    // process with it half written. One handler per process: only `migrate` and this install
    // one, and a process runs one command.
    let cancel = CancelToken::new();
    let handler_token = cancel.clone();
    ctrlc::set_handler(move || handler_token.cancel())
        .map_err(|e| CliError::Invalid(format!("installing the Ctrl-C handler: {e}")))?;
    let run = Run {
        target,
        jobs,
        cancel,
    };
    match input {
        TreeInput::Files(dir) => {
            let tree = FileTree::scan(dir)?;
            run.pack(&tree, FileTree::schema(), tree.len(), out)
        }
        TreeInput::ImageFolder(dir) => {
            let folder = ImageFolder::scan(dir)?;
            run.pack(&folder, ImageFolder::schema(), folder.len(), out)
        }
    }
}

/// How a tree is packed, whatever its converter.
struct Run<'a> {
    target: &'a PackTarget,
    jobs: Option<usize>,
    cancel: CancelToken,
}

impl Run<'_> {
    fn pack<C: Convert>(
        &self,
        convert: &C,
        schema: Schema,
        total: usize,
        out: OutputDir,
    ) -> Result<CacheSummary, CliError> {
        out.write(self.target, schema, |writer| {
            let progress = Progress::samples("packing", Some(total as u64));
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
