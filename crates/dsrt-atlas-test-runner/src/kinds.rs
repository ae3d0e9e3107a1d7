//! The check every error type with a `kind()` takes: one stable name per variant.

use std::collections::{HashMap, HashSet};
use std::mem::discriminant;

/// Checks that `kind` names each variant among `examples` (one or more errors per variant)
/// with one name, and no two variants with the same name. Panics (fails the test) otherwise.
pub fn assert_one_kind_per_variant<E: std::fmt::Debug>(
    examples: &[E],
    kind: impl Fn(&E) -> &'static str,
) {
    let mut by_variant = HashMap::new();
    for error in examples {
        let name = kind(error);
        if let Some(before) = by_variant.insert(discriminant(error), name) {
            assert_eq!(before, name, "{error:?}");
        }
    }
    let names: HashSet<&str> = by_variant.values().copied().collect();
    assert_eq!(names.len(), by_variant.len(), "{names:?}");
}
