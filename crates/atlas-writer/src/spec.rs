//! What a user hands the writer: datasets, their arrays, their attributes.

use array_format::{ArrayElement, ArrayWriter, FillValue};
use atlas_model::Attr;
use ndarray::ArrayD;
use std::marker::PhantomData;

/// One dataset: a name, its arrays, and its dataset-level attributes.
#[derive(Debug)]
pub struct DatasetSpec {
    pub(crate) name: String,
    pub(crate) arrays: Vec<ArraySpec>,
    pub(crate) attrs: Vec<(String, Attr)>,
}

impl DatasetSpec {
    /// A dataset called `name`, with nothing in it yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arrays: Vec::new(),
            attrs: Vec::new(),
        }
    }

    /// Adds an array.
    pub fn array(mut self, array: ArraySpec) -> Self {
        self.arrays.push(array);
        self
    }

    /// Sets a dataset-level attribute.
    pub fn attr(mut self, key: impl Into<String>, value: impl Into<Attr>) -> Self {
        self.attrs.push((key.into(), value.into()));
        self
    }

    /// The dataset's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One array of a dataset: its layout, its data (or none: every element then reads as the fill
/// value), and its attributes.
pub struct ArraySpec {
    pub(crate) name: String,
    pub(crate) dimension_names: Vec<String>,
    pub(crate) shape: Vec<usize>,
    pub(crate) chunk_shape: Option<Vec<usize>>,
    pub(crate) fill_value: Option<FillValue>,
    pub(crate) payload: Box<dyn ArrayPayload>,
    pub(crate) attrs: Vec<(String, Attr)>,
}

impl std::fmt::Debug for ArraySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArraySpec")
            .field("name", &self.name)
            .field("dtype", &self.payload.dtype())
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl ArraySpec {
    /// An array called `name` holding `data`; its shape is the data's.
    pub fn new<T: ArrayElement>(name: impl Into<String>, data: ArrayD<T>) -> Self {
        let shape = data.shape().to_vec();
        Self::with_payload(name.into(), shape, Box::new(Written(data)))
    }

    /// An array called `name` of `shape`, declared but never written.
    pub fn declared<T: ArrayElement>(name: impl Into<String>, shape: Vec<usize>) -> Self {
        Self::with_payload(name.into(), shape, Box::new(Declared::<T>(PhantomData)))
    }

    fn with_payload(name: String, shape: Vec<usize>, payload: Box<dyn ArrayPayload>) -> Self {
        Self {
            name,
            dimension_names: Vec::new(),
            shape,
            chunk_shape: None,
            fill_value: None,
            payload,
            attrs: Vec::new(),
        }
    }

    /// Names the dimensions (one per axis). Unnamed axes are called `dim0`, `dim1`, ...
    pub fn dims<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.dimension_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Tiles the array into chunks of this shape (default: one chunk).
    pub fn chunks(mut self, chunk_shape: Vec<usize>) -> Self {
        self.chunk_shape = Some(chunk_shape);
        self
    }

    /// The value unwritten elements read as.
    pub fn fill(mut self, fill_value: FillValue) -> Self {
        self.fill_value = Some(fill_value);
        self
    }

    /// Sets an attribute on this array.
    pub fn attr(mut self, key: impl Into<String>, value: impl Into<Attr>) -> Self {
        self.attrs.push((key.into(), value.into()));
        self
    }

    /// The array's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Typed data behind a type-erased spec, so one dataset can mix element types.
pub(crate) trait ArrayPayload: Send {
    fn dtype(&self) -> array_format::DType;
    /// Defines `name` in `writer` and writes the data, if any.
    fn write(
        &self,
        writer: &mut ArrayWriter,
        name: &str,
        spec: &ArraySpec,
    ) -> array_format::Result<()>;
}

struct Written<T>(ArrayD<T>);

impl<T: ArrayElement> ArrayPayload for Written<T> {
    fn dtype(&self) -> array_format::DType {
        T::DTYPE
    }

    fn write(
        &self,
        writer: &mut ArrayWriter,
        name: &str,
        spec: &ArraySpec,
    ) -> array_format::Result<()> {
        define::<T>(writer, name, spec)?;
        writer.write_array(name, vec![0; spec.shape.len()], self.0.view())
    }
}

struct Declared<T>(PhantomData<fn() -> T>);

impl<T: ArrayElement> ArrayPayload for Declared<T> {
    fn dtype(&self) -> array_format::DType {
        T::DTYPE
    }

    fn write(
        &self,
        writer: &mut ArrayWriter,
        name: &str,
        spec: &ArraySpec,
    ) -> array_format::Result<()> {
        define::<T>(writer, name, spec)
    }
}

fn define<T: ArrayElement>(
    writer: &mut ArrayWriter,
    name: &str,
    spec: &ArraySpec,
) -> array_format::Result<()> {
    writer.define_array::<T>(
        name,
        spec.dimension_names.clone(),
        spec.shape.clone(),
        spec.chunk_shape.clone(),
        spec.fill_value.clone(),
    )
}
