//! The checks a decoded footer passes before anything uses it.
//!
//! One pass here replaces a bounds check at every use site, and turns a damaged or foreign
//! footer into one [`FooterError::CorruptCollection`] naming the field, never a panic later.
//! A repeated dataset name is refused earlier, by the decode itself, because the map cannot
//! hold one; [`crate::wire::decode_and_validate`] also checks each dataset's schema index as
//! it reads the pair (the datasets are nearly all of a large footer, so this saves a second
//! pass over them) and hands the result to the same rule here.

use crate::budget::heap_of;
use crate::consts::{DATASETS_SEGMENT, FORMAT_VERSION, HEADER_SIZE};
use crate::error::FooterError;
use crate::footer::{CollectionFooter, IndexPairs, InternedSchema};

/// For each string pool index, the variable (segment) of that name, if any.
///
/// Built while validating, so a reader maps a schema's array name to its segment with one index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VariableIndex {
    by_string: Vec<Option<u32>>,
}

impl VariableIndex {
    /// The variable whose name is string pool entry `name`.
    pub fn variable_of(&self, name: u32) -> Option<u32> {
        self.by_string
            .get(usize::try_from(name).ok()?)
            .copied()
            .flatten()
    }
}

/// Heap bytes validation allocates for `footer`: the variable index (one entry per string) and
/// one mark per variable. [`crate::wire::decode_and_validate_within`] charges them first.
pub fn validation_bytes(footer: &CollectionFooter) -> u64 {
    heap_of::<Option<u32>>(footer.string_pool.len() as u64)
        + heap_of::<usize>(footer.variables.len() as u64)
}

/// Checks every rule of the pinned page's "Footer validation" and returns the variable index.
///
/// `segments_end` is the footer's first byte: segments must tile `[8, segments_end)`.
pub fn validate(
    footer: &CollectionFooter,
    segments_end: u64,
) -> Result<VariableIndex, FooterError> {
    let schemas = footer.schema_pool.len();
    let first_bad_schema = footer
        .datasets
        .schemas()
        .iter()
        .position(|&schema| usize::try_from(schema).map_or(true, |s| s >= schemas));
    validate_with(footer, segments_end, first_bad_schema)
}

/// [`validate`], with the datasets' schema indices already checked by the caller:
/// `first_bad_schema` is the first dataset whose index is past the schema pool. The rules run
/// in the same order, so the same footer fails with the same error.
pub(crate) fn validate_with(
    footer: &CollectionFooter,
    segments_end: u64,
    first_bad_schema: Option<usize>,
) -> Result<VariableIndex, FooterError> {
    if footer.version != FORMAT_VERSION {
        return Err(FooterError::corrupt(
            "version",
            format!(
                "footer says {}, trailer says {FORMAT_VERSION}",
                footer.version
            ),
        ));
    }
    let variables = validate_variables(footer, segments_end)?;
    let datasets_segment = has_datasets_segment(footer, &variables);
    // `seen[v]` is one more than the last schema that named variable `v`: how a repeated array
    // name is found in one pass, whatever a schema's length.
    let mut seen = vec![0usize; footer.variables.len()];
    for (i, schema) in footer.schema_pool.iter().enumerate() {
        validate_schema(footer, &variables, datasets_segment, &mut seen, i, schema)?;
    }
    if let Some(ordinal) = first_bad_schema {
        return Err(dataset_schema_error(footer, ordinal));
    }
    Ok(variables)
}

fn validate_variables(
    footer: &CollectionFooter,
    segments_end: u64,
) -> Result<VariableIndex, FooterError> {
    let mut by_string = vec![None; footer.string_pool.len()];
    let mut expected_offset = HEADER_SIZE;
    for (i, variable) in footer.variables.iter().enumerate() {
        let field = |name: &str| format!("variables[{i}].{name}");
        let slot = usize::try_from(variable.name)
            .ok()
            .and_then(|n| by_string.get_mut(n))
            .ok_or_else(|| {
                out_of_pool(
                    field("name"),
                    variable.name,
                    "string",
                    footer.string_pool.len(),
                )
            })?;
        let index = u32::try_from(i)
            .map_err(|_| FooterError::corrupt("variables", "more segments than a u32 can count"))?;
        if slot.replace(index).is_some() {
            return Err(FooterError::corrupt(
                field("name"),
                "two segments carry this name",
            ));
        }
        if variable.seg_len == 0 {
            return Err(FooterError::corrupt(field("seg_len"), "segment is empty"));
        }
        if variable.seg_offset != expected_offset {
            return Err(FooterError::corrupt(
                field("seg_offset"),
                format!(
                    "is {}, segments are back to back so it must be {expected_offset}",
                    variable.seg_offset
                ),
            ));
        }
        expected_offset = variable
            .seg_end()
            .filter(|&end| end <= segments_end)
            .ok_or_else(|| {
                FooterError::corrupt(
                    field("seg_len"),
                    format!("segment runs past the footer at {segments_end}"),
                )
            })?;
    }
    if expected_offset != segments_end {
        return Err(FooterError::corrupt(
            "variables",
            format!("segments end at {expected_offset}, the footer starts at {segments_end}"),
        ));
    }
    Ok(VariableIndex { by_string })
}

fn validate_schema(
    footer: &CollectionFooter,
    variables: &VariableIndex,
    datasets_segment: bool,
    seen: &mut [usize],
    i: usize,
    schema: &InternedSchema,
) -> Result<(), FooterError> {
    let at = format!("schema_pool[{i}]");
    check_pairs(footer, &schema.arrays, &format!("{at}.arrays"))?;
    for (j, (name, _)) in schema.arrays.iter().enumerate() {
        let Some(variable) = variables.variable_of(*name) else {
            return Err(FooterError::corrupt(
                format!("{at}.arrays[{j}].name"),
                "names no segment",
            ));
        };
        // A name maps to one variable, so a repeated name is a variable seen twice.
        let stamp = seen.get_mut(variable as usize);
        if stamp.as_deref() == Some(&(i + 1)) {
            return Err(FooterError::corrupt(
                format!("{at}.arrays[{j}].name"),
                "repeats an earlier array",
            ));
        }
        if let Some(stamp) = stamp {
            *stamp = i + 1;
        }
    }
    check_pairs(footer, &schema.attrs, &format!("{at}.attrs"))?;
    if !schema.attrs.is_empty() && !datasets_segment {
        return Err(FooterError::corrupt(
            format!("{at}.attrs"),
            format!("dataset attributes declared but no {DATASETS_SEGMENT} segment exists"),
        ));
    }
    for (j, (position, keys)) in schema.array_attrs.iter().enumerate() {
        if usize::try_from(*position).map_or(true, |p| p >= schema.arrays.len()) {
            return Err(FooterError::corrupt(
                format!("{at}.array_attrs[{j}].position"),
                format!(
                    "{position} is past the schema's {} arrays",
                    schema.arrays.len()
                ),
            ));
        }
        check_pairs(footer, keys, &format!("{at}.array_attrs[{j}].keys"))?;
    }
    Ok(())
}

/// Every pair is `(string index, dtype index)`; both must resolve.
fn check_pairs(footer: &CollectionFooter, pairs: &IndexPairs, at: &str) -> Result<(), FooterError> {
    for (k, (string, dtype)) in pairs.iter().enumerate() {
        if footer.string(*string).is_none() {
            return Err(out_of_pool(
                format!("{at}[{k}].name"),
                *string,
                "string",
                footer.string_pool.len(),
            ));
        }
        if footer.dtype(*dtype).is_none() {
            return Err(out_of_pool(
                format!("{at}[{k}].dtype"),
                *dtype,
                "dtype",
                footer.dtype_pool.len(),
            ));
        }
    }
    Ok(())
}

/// Dataset `ordinal`'s schema index is past the schema pool.
#[cold]
fn dataset_schema_error(footer: &CollectionFooter, ordinal: usize) -> FooterError {
    let (name, schema) = footer.datasets.get_index(ordinal).unwrap_or(("", 0));
    out_of_pool(
        format!("datasets[{ordinal}] ('{name}').schema"),
        schema,
        "schema",
        footer.schema_pool.len(),
    )
}

fn has_datasets_segment(footer: &CollectionFooter, variables: &VariableIndex) -> bool {
    footer
        .string_pool
        .iter()
        .position(|s| s == DATASETS_SEGMENT)
        .and_then(|i| u32::try_from(i).ok())
        .is_some_and(|i| variables.variable_of(i).is_some())
}

fn out_of_pool(field: String, index: u32, pool: &str, len: usize) -> FooterError {
    FooterError::corrupt(
        field,
        format!("index {index} is past the {pool} pool of {len} entries"),
    )
}
