//! The flags `inspect`, `verify`, `cat` and `iterate` share for caches given as store URLs:
//! where their files are kept locally, how much room that may take, how shards are fetched.

use crate::byte_size::parse_byte_size;
use clap::{Args, ValueEnum};
use datasetrt::OpenOptions;
use dsrt_remote::{default_cache_dir, Access, RemoteOptions, ShardFetch};
use std::path::PathBuf;

/// Options for caches given as URLs (`s3://bucket/prefix`, `gs://`, `az://`); local
/// directories and `file://` URLs ignore them.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Caches on object storage (URLs)")]
pub(crate) struct StoreArgs {
    /// Local directory for the files of caches given as URLs, shared by every process using it
    /// [default: $DSRT_CACHE_DIR, else $XDG_CACHE_HOME/datasetrt/shard-cache, else
    /// ~/.cache/datasetrt/shard-cache]; it must be new, empty or a shard cache already
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Most bytes --cache-dir may hold: a byte size (10GB is 10^10 bytes, 10GiB 10 * 2^30); a
    /// cache whose largest shard does not fit is refused [default: 100GiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_byte_size)]
    cache_limit: Option<u64>,
    /// How a shard that is not local yet is read: `whole` downloads it into --cache-dir,
    /// checked against its SHA-256; `range` fetches each sample's record alone and keeps
    /// nothing (for a few samples of large shards) [default: whole]
    #[arg(long, value_enum, value_name = "HOW")]
    fetch: Option<FetchArg>,
    /// Share --cache-dir with the members of its group (directories 2770, files 0640) instead
    /// of keeping it private to you; a directory made one way is refused the other way
    #[arg(long)]
    cache_group: bool,
    /// Whether a read waits for its whole shard (downloaded and kept) rather than being served
    /// by a range request while the shard downloads: for a command that exits after one read,
    /// whose background download would otherwise be stopped unfinished.
    #[arg(skip)]
    wait_for_shards: bool,
}

/// `--fetch` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FetchArg {
    /// Download whole shards into the local cache directory.
    Whole,
    /// One range request per sample; nothing is cached.
    Range,
}

impl StoreArgs {
    /// The `--fetch` given, if any.
    pub(crate) fn fetch(&self) -> Option<FetchArg> {
        self.fetch
    }

    /// These flags with `--fetch whole`, whatever was given.
    pub(crate) fn whole_shards(&self) -> Self {
        Self {
            fetch: Some(FetchArg::Whole),
            ..self.clone()
        }
    }

    /// These flags, reads waiting for their whole shards (which the shard cache keeps).
    pub(crate) fn waiting_for_shards(&self) -> Self {
        Self {
            wait_for_shards: true,
            ..self.clone()
        }
    }

    /// The options a remote cache is opened with; `open` says whether index.bin and
    /// metadata.arrow are hashed at open.
    pub(crate) fn remote_options(&self, open: OpenOptions) -> RemoteOptions {
        let dir = self.cache_dir.clone().unwrap_or_else(default_cache_dir);
        let mut options = RemoteOptions::new(dir).validate_cache(open.validate_cache);
        if let Some(limit) = self.cache_limit {
            options = options.cache_limit(limit);
        }
        if self.cache_group {
            options = options.cache_access(Access::Group);
        }
        if self.wait_for_shards {
            options = options.read_while_downloading(false);
        }
        options.fetch(match self.fetch {
            Some(FetchArg::Range) => ShardFetch::Range,
            Some(FetchArg::Whole) | None => ShardFetch::Whole,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        store: StoreArgs,
    }

    fn options(args: &[&str]) -> RemoteOptions {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()));
        cli.map(|c| c.store.remote_options(OpenOptions::default()))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn flags_become_remote_options() {
        let o = options(&[
            "--cache-dir",
            "/x",
            "--cache-limit",
            "2GiB",
            "--fetch",
            "range",
        ]);
        assert_eq!(o.cache_dir, PathBuf::from("/x"));
        assert_eq!(o.cache_limit, 2 << 30);
        assert_eq!(o.fetch, ShardFetch::Range);
        assert!(!o.validate_cache);
        assert_eq!(o.cache_access, Access::Private);
        assert_eq!(options(&["--cache-group"]).cache_access, Access::Group);
    }

    #[test]
    fn defaults_are_the_library_defaults() {
        let o = options(&[]);
        assert_eq!(o.cache_limit, dsrt_remote::DEFAULT_CACHE_LIMIT);
        assert_eq!(o.fetch, ShardFetch::Whole);
        assert_eq!(o.cache_dir, default_cache_dir());
    }

    #[test]
    fn bad_sizes_and_fetch_modes_are_usage_errors() {
        let parse =
            |args: &[&str]| Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()));
        assert!(parse(&["--cache-limit", "0"]).is_err());
        assert!(parse(&["--cache-limit", "10XB"]).is_err());
        assert_eq!(options(&["--cache-limit", "10MB"]).cache_limit, 10_000_000);
        assert!(parse(&["--fetch", "some"]).is_err());
    }
}
