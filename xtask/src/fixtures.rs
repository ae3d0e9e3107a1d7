//! `cargo xtask fixtures [--out DIR]`: regenerates the golden fixtures (default `fixtures/`).

use std::path::{Path, PathBuf};

/// The workspace root (xtask lives one level below it).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Replaces the generated folders under `out` (`--out`, default `fixtures/`) with fresh output.
pub(crate) fn run(out: &Path) -> Result<(), String> {
    for generated in ["dsrt", "atlas"] {
        let dir = out.join(generated);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("removing {}: {e}", dir.display()))?;
        }
    }
    let files =
        dsrt_atlas_fixtures::generate(out).map_err(|e| format!("generating fixtures: {e}"))?;
    let mut total = 0u64;
    for file in &files {
        let len = std::fs::metadata(out.join(file)).map_or(0, |m| m.len());
        total += len;
        println!("{len:>8}  {}", file.display());
    }
    println!("{} files, {total} bytes in {}", files.len(), out.display());
    Ok(())
}
