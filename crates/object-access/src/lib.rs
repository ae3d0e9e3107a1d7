//! Object stores from synchronous code: the process's runtime, store URLs, shared clients, and
//! which failures are retryable.
//!
//! What it is for: the pieces every part of this workspace that talks to an object store needs
//! and must agree on. [`runtime`] and [`block_on`] give one tokio runtime per process, built on
//! first use and built again in a forked child, whose copy of the parent's runtime has no
//! threads. [`StoreLocation::parse`] turns a path or URL into a local directory or a
//! [`RemotePrefix`], configured from the environment as object_store reads it, sharing one
//! client per store and configuration, and giving a forked child a client of its own.
//! [`is_retryable_store_error`] and [`is_retryable_io_error`] are the one definition of a
//! failure that trying again later may cure: the `retryable` flag of every error, in Rust and
//! in Python, and exit status 75 of both command-line tools.
//!
//! What it is not for: anything about either format, retrying itself (object_store's client
//! retries a request; callers decide whether to run an operation again), or local files
//! (`durable-fs`).
//!
//! Layering: a bottom-layer crate beside `durable-fs` and `handle-pool`; it depends on no crate
//! of this workspace, and both stacks (`dsrt-remote`, `atlas-reader` and up) depend on it.
#![forbid(unsafe_code)]

mod location;
mod retry;
mod runtime;
mod stores;

pub use location::{LocationError, RemotePrefix, StoreLocation};
pub use retry::{is_retryable_io_error, is_retryable_store_error};
pub use runtime::{block_on, block_on_until, runtime, RuntimeUnavailable};

/// The prefixes of the environment variables a store URL is configured from, as object_store
/// names its options (`AWS_ENDPOINT` is the option `aws_endpoint`).
pub const CONFIG_ENV_PREFIXES: [&str; 3] = ["AWS_", "GOOGLE_", "AZURE_"];
