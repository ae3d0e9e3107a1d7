//! Views of one dataset and of its schema, borrowing the footer.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use array_format::{ArrayElement, ArrayFile, ArrayInfo, FillValue};
use atlas_footer::{CollectionFooter, DType, IndexPairs, InternedSchema};
use atlas_model::from_segment_dtype;
use ndarray::{ArcArray, IxDyn};

/// What an index resolves to if validation were ever bypassed: never reached for a validated
/// footer, and never a panic.
static UNRESOLVED_DTYPE: DType = DType::Binary;

/// One live dataset of an open collection.
#[derive(Clone, Copy)]
pub struct DatasetView<'a> {
    atlas: &'a Atlas,
    ordinal: u32,
    name: &'a str,
    schema: &'a InternedSchema,
}

impl std::fmt::Debug for DatasetView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatasetView")
            .field("name", &self.name)
            .field("ordinal", &self.ordinal)
            .finish()
    }
}

impl<'a> DatasetView<'a> {
    pub(crate) fn new(atlas: &'a Atlas, ordinal: u32, name: &'a str, schema: u32) -> Option<Self> {
        let schema = atlas.footer.schema(schema)?;
        Some(Self {
            atlas,
            ordinal,
            name,
            schema,
        })
    }

    /// The dataset's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The dataset's ordinal: its position in the footer, stable for the container's life.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    pub(crate) fn atlas(&self) -> &'a Atlas {
        self.atlas
    }

    /// The dataset's schema, borrowing the footer.
    pub fn schema(&self) -> SchemaView<'a> {
        SchemaView {
            footer: &self.atlas.footer,
            schema: self.schema,
        }
    }

    /// The schema as owned data.
    pub fn to_owned_schema(&self) -> DatasetSchema {
        let schema = self.schema();
        DatasetSchema {
            arrays: schema
                .arrays()
                .map(|a| ArraySchema {
                    name: a.name().to_owned(),
                    dtype: a.dtype().clone(),
                    attrs: a.attrs().map(|(k, d)| (k.to_owned(), d.clone())).collect(),
                })
                .collect(),
            attrs: schema
                .attrs()
                .map(|(k, d)| (k.to_owned(), d.clone()))
                .collect(),
        }
    }

    /// The schema entry of `array`, or `ArrayNotFound`.
    pub(crate) fn array_meta(&self, array: &str) -> Result<ArrayMeta<'a>, AtlasError> {
        self.schema()
            .array(array)
            .ok_or_else(|| AtlasError::ArrayNotFound {
                dataset: self.name.to_owned(),
                array: array.to_owned(),
            })
    }

    /// The segment holding `array` and this dataset's entry in it, cross-checked against the
    /// footer: a dtype that differs, or a missing entry, is `CorruptCollection`.
    pub(crate) async fn segment_entry(
        &self,
        array: &ArrayMeta<'a>,
    ) -> Result<(&'a ArrayFile, &'a ArrayInfo), AtlasError> {
        let variable = self
            .atlas
            .variable_of_string(array.name_index())
            .ok_or_else(|| {
                AtlasError::corrupt(
                    self.atlas.container.as_ref(),
                    "variables",
                    format!("no segment for '{}'", array.name()),
                )
            })?;
        let file = self.atlas.segment(variable).await?;
        let corrupt = |reason: String| {
            AtlasError::corrupt(
                self.atlas.container.as_ref(),
                format!("segment '{}'", array.name()),
                reason,
            )
        };
        let info = file
            .array(self.name)
            .ok_or_else(|| corrupt(format!("holds no array for dataset '{}'", self.name)))?;
        let stored = from_segment_dtype(&info.dtype);
        if stored != *array.dtype() {
            return Err(corrupt(format!(
                "dataset '{}' is {stored} in the segment, {} in the footer",
                self.name,
                array.dtype()
            )));
        }
        Ok((file, info))
    }

    /// What the segment records about `array`: shape, chunk shape, dimension names, fill value.
    pub async fn array_layout(&self, array: &str) -> Result<ArrayLayout, AtlasError> {
        let meta = self.array_meta(array)?;
        let (_, info) = self.segment_entry(&meta).await?;
        Ok(ArrayLayout {
            dtype: from_segment_dtype(&info.dtype),
            shape: info.shape.clone(),
            chunk_shape: info.chunk_shape.clone(),
            dimension_names: info.dimension_names.clone(),
            fill_value: info.fill_value.clone(),
        })
    }

    /// Reads `shape` elements of `array` from `start`; empty `start` and `shape` read it whole.
    ///
    /// `T` must be the array's element type (`TypeMismatch` otherwise). On every read the footer's
    /// dtype is compared with the segment's; a mismatch is `CorruptCollection`.
    pub async fn read_array<T: ArrayElement>(
        &self,
        array: &str,
        start: Vec<usize>,
        shape: Vec<usize>,
    ) -> Result<ArcArray<T, IxDyn>, AtlasError> {
        let meta = self.array_meta(array)?;
        let requested = from_segment_dtype(&T::DTYPE);
        if requested != *meta.dtype() {
            return Err(AtlasError::TypeMismatch {
                array: array.to_owned(),
                declared: meta.dtype().clone(),
                requested,
            });
        }
        let (file, info) = self.segment_entry(&meta).await?;
        check_selection(array, &info.shape, &start, &shape)?;
        let variable = self
            .atlas
            .variable_of_string(meta.name_index())
            .unwrap_or(u32::MAX);
        file.read_array::<T>(self.name, start, shape)
            .await
            .map_err(|e| self.atlas.segment_error(variable, e))
    }
}

/// Refuses a selection array-format would otherwise index out of bounds with.
fn check_selection(
    array: &str,
    dims: &[u32],
    start: &[usize],
    shape: &[usize],
) -> Result<(), AtlasError> {
    if start.is_empty() && shape.is_empty() {
        return Ok(());
    }
    let invalid = |reason: String| AtlasError::InvalidSelection {
        array: array.to_owned(),
        reason,
    };
    if start.len() != dims.len() || shape.len() != dims.len() {
        return Err(invalid(format!(
            "start has {} axes and shape {}, the array has {}",
            start.len(),
            shape.len(),
            dims.len()
        )));
    }
    for (axis, ((&s, &n), &len)) in start.iter().zip(shape).zip(dims).enumerate() {
        if s.checked_add(n).is_none_or(|end| end > len as usize) {
            return Err(invalid(format!(
                "axis {axis}: {s}+{n} is past its length {len}"
            )));
        }
    }
    Ok(())
}

/// A dataset's schema, borrowing the footer; names resolve on demand, nothing is copied.
#[derive(Clone, Copy)]
pub struct SchemaView<'a> {
    footer: &'a CollectionFooter,
    schema: &'a InternedSchema,
}

impl std::fmt::Debug for SchemaView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.arrays().map(|a| (a.name(), a.dtype())))
            .finish()
    }
}

impl<'a> SchemaView<'a> {
    /// The declared arrays, in the order the writer received them.
    pub fn arrays(&self) -> impl Iterator<Item = ArrayMeta<'a>> + 'a {
        let (footer, schema) = (self.footer, self.schema);
        (0..schema.arrays.len()).map(move |position| ArrayMeta {
            footer,
            schema,
            position,
        })
    }

    /// The array called `name`.
    pub fn array(&self, name: &str) -> Option<ArrayMeta<'a>> {
        self.arrays().find(|a| a.name() == name)
    }

    /// Dataset-level attribute keys with their value types.
    pub fn attrs(&self) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        resolve_pairs(self.footer, &self.schema.attrs)
    }

    /// The value type of dataset attribute `key`, if declared.
    pub fn attr(&self, key: &str) -> Option<&'a DType> {
        self.attrs().find(|(k, _)| *k == key).map(|(_, d)| d)
    }
}

fn resolve_pairs<'a>(
    footer: &'a CollectionFooter,
    pairs: &'a IndexPairs,
) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
    pairs.iter().map(move |(k, d)| {
        (
            footer.string(*k).unwrap_or(""),
            footer.dtype(*d).unwrap_or(&UNRESOLVED_DTYPE),
        )
    })
}

/// One declared array of a schema.
#[derive(Clone, Copy)]
pub struct ArrayMeta<'a> {
    footer: &'a CollectionFooter,
    schema: &'a InternedSchema,
    position: usize,
}

impl std::fmt::Debug for ArrayMeta<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayMeta")
            .field("name", &self.name())
            .field("dtype", self.dtype())
            .finish()
    }
}

impl<'a> ArrayMeta<'a> {
    fn pair(&self) -> (u32, u32) {
        self.schema
            .arrays
            .get(self.position)
            .copied()
            .unwrap_or((u32::MAX, u32::MAX))
    }

    pub(crate) fn name_index(&self) -> u32 {
        self.pair().0
    }

    /// The array's name.
    pub fn name(&self) -> &'a str {
        self.footer.string(self.pair().0).unwrap_or("")
    }

    /// The array's element type.
    pub fn dtype(&self) -> &'a DType {
        self.footer
            .dtype(self.pair().1)
            .unwrap_or(&UNRESOLVED_DTYPE)
    }

    /// The array's attribute keys with their value types.
    pub fn attrs(&self) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        let footer = self.footer;
        let position = self.position;
        self.schema
            .array_attrs
            .iter()
            .filter(move |(p, _)| *p as usize == position)
            .flat_map(move |(_, pairs)| resolve_pairs(footer, pairs))
    }

    /// The value type of this array's attribute `key`, if declared.
    pub fn attr(&self, key: &str) -> Option<&'a DType> {
        self.attrs().find(|(k, _)| *k == key).map(|(_, d)| d)
    }
}

/// A dataset's schema as owned data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSchema {
    /// Declared arrays, in order.
    pub arrays: Vec<ArraySchema>,
    /// Dataset-level attribute keys and value types.
    pub attrs: Vec<(String, DType)>,
}

/// One array of a [`DatasetSchema`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySchema {
    /// The array's name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its attribute keys and value types.
    pub attrs: Vec<(String, DType)>,
}

/// What a segment records about one dataset's array.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayLayout {
    /// Element type.
    pub dtype: DType,
    /// Length of each axis.
    pub shape: Vec<u32>,
    /// Chunk extent along each axis.
    pub chunk_shape: Vec<u32>,
    /// Name of each axis.
    pub dimension_names: Vec<String>,
    /// What unwritten elements read as.
    pub fill_value: Option<FillValue>,
}
