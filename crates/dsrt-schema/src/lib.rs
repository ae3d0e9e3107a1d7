//! The DatasetRT metadata data model.
//!
//! What it is for: the four primitive column types a cache's metadata may hold
//! ([`ColumnType`]), a validated [`Schema`] (the manifest's `metadata_schema`), owned and
//! borrowed values ([`Value`], [`ValueRef`]), the format's value equality (floats by bit
//! pattern), and checking a row against a schema before anything is written.
//!
//! What it is not for: bytes. The manifest, metadata.arrow and shard-envelope crates encode
//! these types; this crate knows no file.
//!
//! Layering: the lowest DatasetRT crate; `dsrt-manifest`, `dsrt-metadata` and `dsrt-shard`
//! build on it.
#![forbid(unsafe_code)]

mod row;
mod schema;
mod value;

pub use row::{Row, RowError, RowProblem};
pub use schema::{Column, ColumnType, Schema, SchemaError};
pub use value::{Value, ValueRef};
