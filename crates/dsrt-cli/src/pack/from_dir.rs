//! `dsrt pack --from-dir` and `--from-imagefolder`: directory trees through the parallel
//! packer (`datasetrt::pack`), with a progress bar.

use super::target::OutputDir;
use super::{PackTarget, TreeInput};
use crate::error::CliError;
use crate::progress::Progress;
use datasetrt::pack::{pack as pack_parallel, Convert, FileTree, ImageFolder, PackOptions};
use datasetrt::{CacheSummary, Schema};

/// Scans `input` and packs it into `out` on `jobs` threads.
pub(crate) fn pack(
    input: TreeInput<'_>,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<CacheSummary, CliError> {
    match input {
        TreeInput::Files(dir) => {
            let tree = FileTree::scan(dir)?;
            let total = tree.len();
            run(&tree, FileTree::schema(), total, target, out, jobs)
        }
        TreeInput::ImageFolder(dir) => {
            let folder = ImageFolder::scan(dir)?;
            let total = folder.len();
            run(&folder, ImageFolder::schema(), total, target, out, jobs)
        }
    }
}

fn run<C: Convert>(
    convert: &C,
    schema: Schema,
    total: usize,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<CacheSummary, CliError> {
    out.write(target, schema, |writer| {
        let progress = Progress::samples("packing", Some(total as u64));
        let advance = |_: u64| progress.inc();
        let mut options = PackOptions::default().progress(&advance);
        if let Some(jobs) = jobs {
            options = options.jobs(jobs);
        }
        pack_parallel(convert, writer, &options)?;
        progress.finish();
        Ok(())
    })
}
