//! Reads typed by the array's declared element type, for callers that learn the type only at
//! run time (a Python binding, a tool): one value, [`ArrayData`], of whichever type it is.

use crate::{Atlas, AtlasError, DatasetView};
use array_format::TimestampNs;
use atlas_footer::DType;
use ndarray::{Array1, ArrayD};

/// An array's elements, of the element type its dataset declares.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayData {
    /// `int8`.
    Int8(ArrayD<i8>),
    /// `int16`.
    Int16(ArrayD<i16>),
    /// `int32`.
    Int32(ArrayD<i32>),
    /// `int64`.
    Int64(ArrayD<i64>),
    /// `uint8`.
    UInt8(ArrayD<u8>),
    /// `uint16`.
    UInt16(ArrayD<u16>),
    /// `uint32`.
    UInt32(ArrayD<u32>),
    /// `uint64`.
    UInt64(ArrayD<u64>),
    /// `float32`.
    Float32(ArrayD<f32>),
    /// `float64`.
    Float64(ArrayD<f64>),
    /// Nanoseconds since the Unix epoch.
    TimestampNs(ArrayD<TimestampNs>),
    /// UTF-8 strings.
    String(ArrayD<String>),
    /// Byte strings.
    Binary(ArrayD<Vec<u8>>),
}

/// Runs `$read` with `$t` bound to the element type of `$dtype`, wrapping the array it gives
/// in the matching [`ArrayData`] variant.
macro_rules! by_dtype {
    ($dtype:expr, $array:expr, |$t:ident| $read:expr) => {
        match $dtype {
            DType::Int8 => ArrayData::Int8({
                type $t = i8;
                $read
            }),
            DType::Int16 => ArrayData::Int16({
                type $t = i16;
                $read
            }),
            DType::Int32 => ArrayData::Int32({
                type $t = i32;
                $read
            }),
            DType::Int64 => ArrayData::Int64({
                type $t = i64;
                $read
            }),
            DType::UInt8 => ArrayData::UInt8({
                type $t = u8;
                $read
            }),
            DType::UInt16 => ArrayData::UInt16({
                type $t = u16;
                $read
            }),
            DType::UInt32 => ArrayData::UInt32({
                type $t = u32;
                $read
            }),
            DType::UInt64 => ArrayData::UInt64({
                type $t = u64;
                $read
            }),
            DType::Float32 => ArrayData::Float32({
                type $t = f32;
                $read
            }),
            DType::Float64 => ArrayData::Float64({
                type $t = f64;
                $read
            }),
            DType::TimestampNs => ArrayData::TimestampNs({
                type $t = TimestampNs;
                $read
            }),
            DType::String => ArrayData::String({
                type $t = String;
                $read
            }),
            DType::Binary => ArrayData::Binary({
                type $t = Vec<u8>;
                $read
            }),
            other => {
                return Err(AtlasError::UnsupportedDType {
                    array: $array.to_owned(),
                    dtype: other.clone(),
                })
            }
        }
    };
}

impl DatasetView<'_> {
    /// Reads `shape` elements of `array` from `start` (both empty: the whole array) as the
    /// type the dataset declares ([`DatasetView::read_array`] with that type);
    /// `UnsupportedDType` for a type array-format cannot read typed.
    pub async fn read_data(
        &self,
        array: &str,
        start: Vec<usize>,
        shape: Vec<usize>,
    ) -> Result<ArrayData, AtlasError> {
        let dtype = self.array_meta(array)?.dtype().clone();
        Ok(by_dtype!(dtype, array, |T| {
            self.read_array::<T>(array, start, shape)
                .await?
                .into_owned()
        }))
    }
}

impl Atlas {
    /// Reads `array` whole from each dataset at `ordinals` ([`Atlas::read_run`]) as the type
    /// the first of them declares: every element in one flat array (datasets one after the
    /// other, each row-major) and each dataset's shape. No ordinals: no data, of no type.
    pub async fn read_run_data(
        &self,
        array: &str,
        ordinals: &[u32],
    ) -> Result<Option<(ArrayData, Vec<Vec<usize>>)>, AtlasError> {
        let Some(first) = ordinals.first().and_then(|&o| self.dataset_at(o)) else {
            // No ordinal, or the first is not a live dataset: the run read says which.
            return self.read_run::<f64>(array, ordinals).await.map(|_| None);
        };
        let dtype = first.array_meta(array)?.dtype().clone();
        let shapes;
        let data = by_dtype!(dtype, array, |T| {
            let (values, each) = self.read_run::<T>(array, ordinals).await?.into_parts();
            shapes = each;
            Array1::from_vec(values).into_dyn()
        });
        Ok(Some((data, shapes)))
    }
}

impl Atlas {
    /// [`DatasetView::read_data`] of `array` whole from each of the live datasets `names`, in
    /// order (`DatasetNotFound` for a name no live dataset has).
    pub async fn read_data_each(
        &self,
        names: &[impl AsRef<str>],
        array: &str,
    ) -> Result<Vec<ArrayData>, AtlasError> {
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let view = self.dataset_named(name.as_ref())?;
            out.push(view.read_data(array, Vec::new(), Vec::new()).await?);
        }
        Ok(out)
    }

    /// [`Atlas::read_run_data`] of the live datasets `names`, in order.
    pub async fn read_run_data_named(
        &self,
        array: &str,
        names: &[impl AsRef<str>],
    ) -> Result<Option<(ArrayData, Vec<Vec<usize>>)>, AtlasError> {
        let ordinals = (names.iter())
            .map(|name| Ok(self.dataset_named(name.as_ref())?.ordinal()))
            .collect::<Result<Vec<u32>, AtlasError>>()?;
        self.read_run_data(array, &ordinals).await
    }
}

impl ArrayData {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Self::Int8(_) => DType::Int8,
            Self::Int16(_) => DType::Int16,
            Self::Int32(_) => DType::Int32,
            Self::Int64(_) => DType::Int64,
            Self::UInt8(_) => DType::UInt8,
            Self::UInt16(_) => DType::UInt16,
            Self::UInt32(_) => DType::UInt32,
            Self::UInt64(_) => DType::UInt64,
            Self::Float32(_) => DType::Float32,
            Self::Float64(_) => DType::Float64,
            Self::TimestampNs(_) => DType::TimestampNs,
            Self::String(_) => DType::String,
            Self::Binary(_) => DType::Binary,
        }
    }

    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        macro_rules! shape {
            ($($variant:ident),*) => {
                match self {
                    $(Self::$variant(a) => a.shape(),)*
                }
            };
        }
        shape!(
            Int8,
            Int16,
            Int32,
            Int64,
            UInt8,
            UInt16,
            UInt32,
            UInt64,
            Float32,
            Float64,
            TimestampNs,
            String,
            Binary
        )
    }
}
