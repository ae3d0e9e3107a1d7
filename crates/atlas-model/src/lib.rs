//! The vocabulary Atlas's writer and reader share on top of array-format.
//!
//! What it is for: [`Attr`], the attribute value a user writes and reads (array-format's
//! `AttributeValue` minus nothing, and with no timestamp variant, because a stored value could
//! not carry one back); conversions between array-format's `DType` and the footer's
//! [`atlas_footer::DType`]; and [`validate_name`], the one rule every dataset name, array name
//! and attribute key passes at write time.
//!
//! What it is not for: I/O, or anything about the container's bytes (`atlas-footer`).
//!
//! Layering: above `atlas-footer` and array-format, below `atlas-writer` and `atlas-reader`.
#![forbid(unsafe_code)]

mod attr;
mod dtype;
mod name;

pub use attr::Attr;
pub use dtype::{from_segment_dtype, to_segment_dtype};
pub use name::{validate_name, NameError, NameKind, UnknownNameKind};
