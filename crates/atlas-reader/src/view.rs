//! Views of one dataset and of its schema, borrowing the footer.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use array_format::{ArrayElement, ArrayFile, ArrayInfo, FillValue};
use atlas_footer::budget::{heap_bytes, heap_of};
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

/// Heap bytes [`resolve_schemas`] allocates for `footer`, counted before it runs so that the
/// open can charge them to the footer's budget: one shared name per pool string, and per
/// schema its arrays and attributes, each with a copy of its dtype.
pub(crate) fn resolved_schemas_bytes(footer: &CollectionFooter) -> u64 {
    let names = heap_of::<SmolStr>(footer.string_pool.len() as u64)
        + footer
            .string_pool
            .iter()
            .map(|name| shared_name_bytes(name.len()))
            .sum::<u64>();
    // A pair's dtype is cloned: its nested children are boxes of their own.
    let dtype_boxes: Vec<u64> = footer.dtype_pool.iter().map(nested_bytes).collect();
    let pair = |&(_, dtype): &(u32, u32)| dtype_boxes.get(dtype as usize).copied().unwrap_or(0);
    let attr_list = |pairs: &[(u32, u32)]| {
        heap_of::<(SmolStr, DType)>(pairs.len() as u64) + pairs.iter().map(pair).sum::<u64>()
    };
    let schemas = footer
        .schema_pool
        .iter()
        .map(|schema| {
            let array_attrs: u64 = schema
                .array_attrs
                .iter()
                .map(|(_, pairs)| attr_list(pairs))
                .sum();
            heap_of::<ResolvedArray>(schema.arrays.len() as u64)
                + schema.arrays.iter().map(pair).sum::<u64>()
                + attr_list(&schema.attrs)
                + array_attrs
        })
        .sum::<u64>();
    names
        + heap_of::<u64>(dtype_boxes.len() as u64)
        + heap_of::<usize>(widest_schema(footer) as u64)
        + heap_of::<ResolvedSchema>(footer.schema_pool.len() as u64)
        + schemas
}

/// The most arrays one schema declares.
fn widest_schema(footer: &CollectionFooter) -> usize {
    footer
        .schema_pool
        .iter()
        .map(|schema| schema.arrays.len())
        .max()
        .unwrap_or(0)
}

/// Heap bytes of a `SmolStr` of `len` bytes: inline up to 23, else one `Arc<str>`.
fn shared_name_bytes(len: usize) -> u64 {
    if len <= 23 {
        0
    } else {
        heap_bytes(len as u64 + 16)
    }
}

/// Heap bytes of the boxes a clone of `dtype` allocates (one per nested child).
fn nested_bytes(dtype: &DType) -> u64 {
    match dtype {
        DType::List { child } | DType::FixedSizeList { child, .. } => {
            heap_of::<DType>(1) + nested_bytes(child)
        }
        _ => 0,
    }
}

/// Resolves every schema of the pool; an index that does not resolve is `CorruptCollection`
/// (a validated footer has none). Each pool string becomes one `SmolStr` that every schema
/// naming it shares, and each list is allocated at its final length, so what this builds is
/// what [`resolved_schemas_bytes`] counted; one pass over each schema's pairs.
pub(crate) fn resolve_schemas(
    container: &str,
    footer: &CollectionFooter,
    variables: &VariableIndex,
) -> Result<Vec<ResolvedSchema>, AtlasError> {
    let names: Vec<SmolStr> = footer.string_pool.iter().map(SmolStr::new).collect();
    let mut resolved = Vec::with_capacity(footer.schema_pool.len());
    // Attribute pairs per array position of the schema at hand, reused across schemas.
    let mut attr_counts: Vec<usize> = Vec::with_capacity(widest_schema(footer));
    for (i, schema) in footer.schema_pool.iter().enumerate() {
        let at = format!("schema_pool[{i}]");
        attr_counts.clear();
        attr_counts.resize(schema.arrays.len(), 0);
        for (position, pairs) in schema.array_attrs.iter() {
            if let Some(count) = attr_counts.get_mut(*position as usize) {
                *count += pairs.len();
            }
        }
        let mut arrays = Vec::with_capacity(schema.arrays.len());
        for (position, &(name, dtype)) in schema.arrays.iter().enumerate() {
            let field = format!("{at}.arrays[{position}]");
            let (name_text, dtype) =
                resolve_pair(container, footer, &names, (name, dtype), &field)?;
            let variable = variables
                .variable_of(name)
                .ok_or_else(|| AtlasError::corrupt(container, field.clone(), "names no segment"))?;
            arrays.push(ResolvedArray {
                name: name_text,
                dtype,
                variable,
                attrs: Vec::with_capacity(attr_counts.get(position).copied().unwrap_or(0)),
            });
        }
        for (j, (position, pairs)) in schema.array_attrs.iter().enumerate() {
            let field = format!("{at}.array_attrs[{j}]");
            let array = usize::try_from(*position)
                .ok()
                .and_then(|p| arrays.get_mut(p))
                .ok_or_else(|| {
                    AtlasError::corrupt(container, field.clone(), "names no array of the schema")
                })?;
            for &pair in pairs.iter() {
                array
                    .attrs
                    .push(resolve_pair(container, footer, &names, pair, &field)?);
            }
        }
        resolved.push(ResolvedSchema {
            arrays,
            attrs: resolve_pairs(
                container,
                footer,
                &names,
                &schema.attrs,
                &format!("{at}.attrs"),
            )?,
        });
    }
    Ok(resolved)
}

fn resolve_pairs(
    container: &str,
    footer: &CollectionFooter,
    names: &[SmolStr],
    pairs: &IndexPairs,
    field: &str,
) -> Result<Vec<(SmolStr, DType)>, AtlasError> {
    let mut resolved = Vec::with_capacity(pairs.len());
    for &pair in pairs.iter() {
        resolved.push(resolve_pair(container, footer, names, pair, field)?);
    }
    Ok(resolved)
}

fn resolve_pair(
    container: &str,
    footer: &CollectionFooter,
    names: &[SmolStr],
    (name, dtype): (u32, u32),
    field: &str,
) -> Result<(SmolStr, DType), AtlasError> {
    let name = names.get(name as usize).ok_or_else(|| {
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
    Ok((name.clone(), dtype.clone()))
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

    /// The dataset's ordinal: its position in the footer, stable for the container's life (in
    /// a growing collection, its part's first ordinal plus its position in the part's footer).
    pub fn ordinal(&self) -> u32 {
        self.atlas.ordinal_base + self.ordinal
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

    /// How many chunks of `array` were written, and how many its chunk grid has: what a copy
    /// needs to tell an array written whole from one declared and never written (all or none
    /// of the grid) and from one written in part.
    pub async fn written_chunks(&self, array: &str) -> Result<(usize, usize), AtlasError> {
        let meta = self.array_meta(array)?;
        let (_, info) = self.segment_entry(&meta).await?;
        let grid = info
            .shape
            .iter()
            .zip(&info.chunk_shape)
            .map(|(&len, &chunk)| (len as usize).div_ceil((chunk as usize).max(1)))
            .product();
        Ok((info.written_chunks().count(), grid))
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
