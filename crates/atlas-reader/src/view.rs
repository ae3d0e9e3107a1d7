//! Views of one dataset and of its schema, borrowing the footer.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use array_format::{ArrayElement, ArrayFile, ArrayInfo, FillValue};
use atlas_footer::validate::VariableIndex;
use atlas_footer::{CollectionFooter, DType, IndexPairs};
use atlas_model::from_segment_dtype;
use ndarray::{ArcArray, IxDyn};
use smol_str::SmolStr;

/// A footer schema with every pool index resolved, once, at open: names, dtypes and the segment
/// of each array, so no lookup is left that could fail while the collection is in use.
#[derive(Debug)]
pub(crate) struct ResolvedSchema {
    arrays: Vec<ResolvedArray>,
    attrs: Vec<(SmolStr, DType)>,
}

#[derive(Debug)]
struct ResolvedArray {
    name: SmolStr,
    dtype: DType,
    /// The segment holding this array.
    variable: u32,
    attrs: Vec<(SmolStr, DType)>,
}

/// Resolves every schema of the pool; an index that does not resolve is `CorruptCollection`
/// (a validated footer has none).
pub(crate) fn resolve_schemas(
    container: &str,
    footer: &CollectionFooter,
    variables: &VariableIndex,
) -> Result<Vec<ResolvedSchema>, AtlasError> {
    footer
        .schema_pool
        .iter()
        .enumerate()
        .map(|(i, schema)| {
            let at = format!("schema_pool[{i}]");
            let arrays = schema
                .arrays
                .iter()
                .enumerate()
                .map(|(position, &(name, dtype))| {
                    let field = format!("{at}.arrays[{position}]");
                    let (name_text, dtype) =
                        resolve_pair(container, footer, (name, dtype), &field)?;
                    let variable = variables.variable_of(name).ok_or_else(|| {
                        AtlasError::corrupt(container, field.clone(), "names no segment")
                    })?;
                    let attrs = schema
                        .array_attrs
                        .iter()
                        .filter(|(p, _)| usize::try_from(*p).ok() == Some(position))
                        .flat_map(|(_, pairs)| pairs.iter())
                        .map(|&pair| {
                            resolve_pair(container, footer, pair, &format!("{at}.array_attrs"))
                        })
                        .collect::<Result<_, _>>()?;
                    Ok(ResolvedArray {
                        name: name_text,
                        dtype,
                        variable,
                        attrs,
                    })
                })
                .collect::<Result<_, AtlasError>>()?;
            Ok(ResolvedSchema {
                arrays,
                attrs: resolve_pairs(container, footer, &schema.attrs, &format!("{at}.attrs"))?,
            })
        })
        .collect()
}

fn resolve_pairs(
    container: &str,
    footer: &CollectionFooter,
    pairs: &IndexPairs,
    field: &str,
) -> Result<Vec<(SmolStr, DType)>, AtlasError> {
    pairs
        .iter()
        .map(|&pair| resolve_pair(container, footer, pair, field))
        .collect()
}

fn resolve_pair(
    container: &str,
    footer: &CollectionFooter,
    (name, dtype): (u32, u32),
    field: &str,
) -> Result<(SmolStr, DType), AtlasError> {
    let name = footer.string(name).ok_or_else(|| {
        AtlasError::corrupt(
            container,
            field,
            format!("string index {name} is past the pool"),
        )
    })?;
    let dtype = footer.dtype(dtype).ok_or_else(|| {
        AtlasError::corrupt(
            container,
            field,
            format!("dtype index {dtype} is past the pool"),
        )
    })?;
    Ok((SmolStr::new(name), dtype.clone()))
}

/// One live dataset of an open collection.
#[derive(Clone, Copy)]
pub struct DatasetView<'a> {
    atlas: &'a Atlas,
    ordinal: u32,
    name: &'a str,
    schema: &'a ResolvedSchema,
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
        let schema = atlas.resolved_schema(schema)?;
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
        let file = self.atlas.segment(array.variable()).await?;
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
        file.read_array::<T>(self.name, start, shape)
            .await
            .map_err(|e| self.atlas.segment_error(meta.name(), e))
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

/// A dataset's schema, borrowing the open collection; nothing is copied.
#[derive(Clone, Copy)]
pub struct SchemaView<'a> {
    schema: &'a ResolvedSchema,
}

impl std::fmt::Debug for SchemaView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.arrays().map(|a| (a.name(), a.dtype())))
            .finish()
    }
}

impl<'a> SchemaView<'a> {
    pub(crate) fn of(schema: &'a ResolvedSchema) -> Self {
        Self { schema }
    }

    /// The declared arrays, in the order the writer received them.
    pub fn arrays(&self) -> impl Iterator<Item = ArrayMeta<'a>> + 'a {
        self.schema.arrays.iter().map(|array| ArrayMeta { array })
    }

    /// The array called `name`.
    pub fn array(&self, name: &str) -> Option<ArrayMeta<'a>> {
        self.arrays().find(|a| a.name() == name)
    }

    /// Dataset-level attribute keys with their value types.
    pub fn attrs(&self) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        pairs(&self.schema.attrs)
    }

    /// The value type of dataset attribute `key`, if declared.
    pub fn attr(&self, key: &str) -> Option<&'a DType> {
        self.attrs().find(|(k, _)| *k == key).map(|(_, d)| d)
    }
}

fn pairs(pairs: &[(SmolStr, DType)]) -> impl Iterator<Item = (&str, &DType)> + '_ {
    pairs.iter().map(|(k, d)| (k.as_str(), d))
}

/// One declared array of a schema.
#[derive(Clone, Copy)]
pub struct ArrayMeta<'a> {
    array: &'a ResolvedArray,
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
    /// The segment holding this array.
    pub(crate) fn variable(&self) -> u32 {
        self.array.variable
    }

    /// The array's name.
    pub fn name(&self) -> &'a str {
        &self.array.name
    }

    /// The array's element type.
    pub fn dtype(&self) -> &'a DType {
        &self.array.dtype
    }

    /// The array's attribute keys with their value types.
    pub fn attrs(&self) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        pairs(&self.array.attrs)
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
