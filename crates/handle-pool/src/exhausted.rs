//! Telling a resource running out from any other I/O error.

use crate::{HandlePool, CAPACITY_ENV};
use std::io;

/// A process resource that ran out while opening or mapping a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// No descriptor left: the process's `RLIMIT_NOFILE` (`EMFILE`) or the system's table
    /// (`ENFILE`).
    Descriptors,
    /// No mapping could be made (`ENOMEM` from `mmap`): `vm.max_map_count` or address space.
    Mappings,
    /// An allocation failed (an error of kind `OutOfMemory`: a buffer for a payload larger
    /// than the process may allocate under its memory limit).
    Memory,
}

impl Exhausted {
    /// The resource `error` says ran out, if it is such an error.
    pub fn of(error: &io::Error) -> Option<Self> {
        const ENFILE: i32 = 23;
        const EMFILE: i32 = 24;
        const ENOMEM: i32 = 12;
        if error.raw_os_error().is_none() && error.kind() == io::ErrorKind::OutOfMemory {
            return Some(Self::Memory);
        }
        match error.raw_os_error()? {
            EMFILE | ENFILE => Some(Self::Descriptors),
            ENOMEM => Some(Self::Mappings),
            _ => None,
        }
    }

    /// Which limit to look at, and the bound this crate keeps, for a message.
    pub fn advice(self) -> String {
        let bound = HandlePool::global().capacity();
        let limit = match self {
            Self::Descriptors => "open file descriptors (raise `ulimit -n`)",
            Self::Mappings => "memory mappings (raise `vm.max_map_count`)",
            Self::Memory => {
                return "the process could not allocate the memory (raise its memory limit, \
                        or read with fewer workers or less read-ahead)"
                    .into()
            }
        };
        format!(
            "the process ran out of {limit}; DatasetRT keeps at most {bound} idle shard files \
             and mappings open per process (set {CAPACITY_ENV}, `max_open_shards` from \
             Python, or `--max-open-shards` on the command line, to change that)"
        )
    }
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Descriptors => "out of file descriptors",
            Self::Mappings => "out of memory mappings",
            Self::Memory => "out of memory",
        })
    }
}
