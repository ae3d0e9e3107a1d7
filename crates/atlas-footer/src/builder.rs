//! Interning: how a writer builds a [`CollectionFooter`] whose pools hold each value once.
//!
//! Strings and schemas intern through a hash set; dtypes by a scan, since a collection holds a
//! handful. A schema is all pool indices, so it hashes by content: equal content, one entry.

use crate::consts::FORMAT_VERSION;
use crate::datasets::InsertError;
use crate::dtype::{Codec, DType};
use crate::footer::{CollectionFooter, DatasetMap, InternedSchema, VariableEntry};
use indexmap::IndexSet;
use thiserror::Error;

type FastSet<T> = IndexSet<T, foldhash::fast::RandomState>;

/// Why the builder refused an addition.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// A dataset of this name was already added.
    #[error("dataset name '{0}' was already written to this collection")]
    DuplicateDataset(String),
    /// A segment of this name was already added.
    #[error("variable '{0}' already has a segment")]
    DuplicateVariable(String),
    /// A pool outgrew the u32 indices that address it.
    #[error("the {0} pool is full: indices are u32")]
    PoolFull(&'static str),
}

/// Builds a footer; see the [module docs](self).
#[derive(Debug, Default)]
pub struct FooterBuilder {
    strings: FastSet<String>,
    dtypes: Vec<DType>,
    schemas: FastSet<InternedSchema>,
    variables: Vec<VariableEntry>,
    datasets: DatasetMap,
}

impl FooterBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pool index of `s`, adding it on first sight.
    pub fn intern_string(&mut self, s: &str) -> Result<u32, BuildError> {
        if let Some(i) = self.strings.get_index_of(s) {
            return to_index(i, "string");
        }
        let (i, _) = self.strings.insert_full(s.to_owned());
        to_index(i, "string")
    }

    /// The pool index of `dtype`, adding it on first sight.
    pub fn intern_dtype(&mut self, dtype: &DType) -> Result<u32, BuildError> {
        let i = match self.dtypes.iter().position(|d| d == dtype) {
            Some(i) => i,
            None => {
                self.dtypes.push(dtype.clone());
                self.dtypes.len() - 1
            }
        };
        to_index(i, "dtype")
    }

    /// The pool index of `schema`, adding it on first sight.
    pub fn intern_schema(&mut self, schema: InternedSchema) -> Result<u32, BuildError> {
        let (i, _) = self.schemas.insert_full(schema);
        to_index(i, "schema")
    }

    /// Whether a dataset of this name was added.
    pub fn contains_dataset(&self, name: &str) -> bool {
        self.datasets.contains_key(name)
    }

    /// Number of datasets added so far.
    pub fn dataset_count(&self) -> usize {
        self.datasets.len()
    }

    /// Adds a dataset and returns its ordinal. A repeated name is refused.
    pub fn add_dataset(&mut self, name: &str, schema: u32) -> Result<u32, BuildError> {
        match self.datasets.insert(name, schema) {
            Ok(ordinal) => to_index(ordinal, "dataset"),
            Err(InsertError::Duplicate(_)) => Err(BuildError::DuplicateDataset(name.to_owned())),
            Err(InsertError::Full) => Err(BuildError::PoolFull("dataset")),
        }
    }

    /// Records a segment. Segments must be added in container order.
    pub fn add_variable(
        &mut self,
        name: &str,
        seg_offset: u64,
        seg_len: u64,
    ) -> Result<(), BuildError> {
        let name_index = self.intern_string(name)?;
        if self.variables.iter().any(|v| v.name == name_index) {
            return Err(BuildError::DuplicateVariable(name.to_owned()));
        }
        self.variables.push(VariableEntry {
            name: name_index,
            seg_offset,
            seg_len,
        });
        Ok(())
    }

    /// The finished footer.
    pub fn finish(self, codec: Codec, created_unix_ms: i64) -> CollectionFooter {
        CollectionFooter {
            version: FORMAT_VERSION,
            codec,
            created_unix_ms,
            string_pool: self.strings.into_iter().collect(),
            dtype_pool: self.dtypes,
            schema_pool: self.schemas.into_iter().collect(),
            variables: self.variables,
            datasets: self.datasets,
        }
    }
}

fn to_index(i: usize, pool: &'static str) -> Result<u32, BuildError> {
    u32::try_from(i).map_err(|_| BuildError::PoolFull(pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::IndexPairs;

    #[test]
    fn pools_hold_each_value_once() {
        let mut b = FooterBuilder::new();
        assert_eq!(b.intern_string("t").unwrap(), 0);
        assert_eq!(b.intern_string("units").unwrap(), 1);
        assert_eq!(b.intern_string("t").unwrap(), 0);
        assert_eq!(b.intern_dtype(&DType::Float32).unwrap(), 0);
        assert_eq!(b.intern_dtype(&DType::String).unwrap(), 1);
        assert_eq!(b.intern_dtype(&DType::Float32).unwrap(), 0);
        let schema = InternedSchema {
            arrays: IndexPairs::from_iter([(0, 0)]),
            ..Default::default()
        };
        assert_eq!(b.intern_schema(schema.clone()).unwrap(), 0);
        assert_eq!(b.intern_schema(InternedSchema::default()).unwrap(), 1);
        assert_eq!(b.intern_schema(schema).unwrap(), 0);
        let footer = b.finish(Codec::Zstd, 0);
        assert_eq!(footer.string_pool, ["t", "units"]);
        assert_eq!(footer.schema_pool.len(), 2);
    }

    #[test]
    fn datasets_get_ordinals_and_repeats_are_refused() {
        let mut b = FooterBuilder::new();
        assert_eq!(b.add_dataset("jan", 0), Ok(0));
        assert_eq!(b.add_dataset("feb", 0), Ok(1));
        assert_eq!(
            b.add_dataset("jan", 0),
            Err(BuildError::DuplicateDataset("jan".into()))
        );
        b.add_variable("t", 8, 10).unwrap();
        assert_eq!(
            b.add_variable("t", 18, 10),
            Err(BuildError::DuplicateVariable("t".into()))
        );
    }
}
