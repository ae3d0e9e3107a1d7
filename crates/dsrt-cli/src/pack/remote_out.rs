//! `--out` as a store URL: the prefix is checked before any input is read (no manifest.json;
//! empty unless `--overwrite-partial`), then the cache is packed into a local staging directory
//! and published (`dsrt_remote::write_cache_at`), with upload progress on stderr.

use super::PackTarget;
use crate::error::CliError;
use crate::output::{human_bytes, warn};
use crate::progress::upload_bar;
use dsrt_remote::{
    check_publish_target, PublishEvent, PublishOptions, RemotePrefix, RemoteWriterOptions,
    StoreLocation,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A checked remote `--out`.
#[derive(Debug)]
pub(crate) struct RemoteOut {
    to: RemotePrefix,
    options: RemoteWriterOptions,
}

/// `--out` with a `file://` URL turned into its path; anything else as given.
pub(crate) fn local_out(out: &Path) -> Result<PathBuf, CliError> {
    match out.to_str().filter(|text| text.starts_with("file://")) {
        Some(text) => match StoreLocation::parse(text)? {
            StoreLocation::Local(path) => Ok(path),
            StoreLocation::Remote(_) => Ok(out.to_path_buf()),
        },
        None => Ok(out.to_path_buf()),
    }
}

impl RemoteOut {
    /// `Some` when `out` is a store URL, checked to receive a new cache.
    pub(crate) fn prepare(out: &Path, target: &PackTarget) -> Result<Option<Self>, CliError> {
        let Some(text) = out.to_str().filter(|text| text.contains("://")) else {
            return Ok(None);
        };
        let StoreLocation::Remote(to) = StoreLocation::parse(text)? else {
            return Ok(None);
        };
        let publish = PublishOptions {
            overwrite_partial: target.overwrite_partial,
            progress: Some(progress(to.url())),
            ..PublishOptions::default()
        };
        check_publish_target(&to, &publish)?;
        let options = RemoteWriterOptions {
            staging_root: None,
            publish,
        };
        Ok(Some(Self { to, options }))
    }

    /// The prefix and how a writer stages and publishes to it.
    pub(crate) fn into_parts(self) -> (RemotePrefix, RemoteWriterOptions) {
        (self.to, self.options)
    }
}

/// One line on stderr when the upload starts, and a byte bar on a terminal.
fn progress(url: &str) -> dsrt_remote::PublishProgress {
    let bar = upload_bar("uploading");
    let url = url.to_owned();
    Arc::new(move |event: &PublishEvent| match event {
        PublishEvent::Started { files, bytes } => {
            warn(format_args!(
                "publishing {files} files ({}) and manifest.json to {url}",
                human_bytes(*bytes)
            ));
            bar.set_length(*bytes);
        }
        PublishEvent::Uploaded { bytes, .. } => bar.inc(*bytes),
        PublishEvent::Published => bar.finish_and_clear(),
        _ => {}
    })
}
