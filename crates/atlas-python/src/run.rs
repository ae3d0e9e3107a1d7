//! One array of a run of datasets: `Collection.read_run` and `Collection.run_layouts`.

use crate::collection::Data;
use crate::errors::Failure;
use atlas::format::DType;
use atlas::ndarray::{Array1, ArrayD};
use atlas::{Atlas, AtlasError, Attr, Run, TimestampNs};

/// The ordinals of the live datasets `names`, in order (`DatasetNotFound` names the first that
/// is not live).
fn ordinals(atlas: &Atlas, names: &[String]) -> Result<Vec<u32>, Failure> {
    names
        .iter()
        .map(|name| {
            atlas
                .dataset(name)
                .map(|d| d.ordinal())
                .ok_or_else(|| Failure::Atlas(AtlasError::DatasetNotFound(name.clone())))
        })
        .collect()
}

/// The declared dtype of `array` in the first of `names` (the run's reads check the rest).
fn declared(atlas: &Atlas, names: &[String], array: &str) -> Result<Option<DType>, Failure> {
    let Some(first) = names.first() else {
        return Ok(None);
    };
    let view = atlas
        .dataset(first)
        .ok_or_else(|| Failure::Atlas(AtlasError::DatasetNotFound(first.clone())))?;
    let meta = view
        .schema()
        .array(array)
        .ok_or_else(|| AtlasError::ArrayNotFound {
            dataset: first.clone(),
            array: array.to_owned(),
        })?;
    Ok(Some(meta.dtype().clone()))
}

fn flat<T>(values: Vec<T>) -> ArrayD<T> {
    Array1::from_vec(values).into_dyn()
}

/// `array` read whole from each dataset of `names`, in order: every element in one flat
/// buffer (datasets one after the other, each row-major) and each dataset's shape.
pub(crate) async fn read_run(
    atlas: &Atlas,
    array: &str,
    names: &[String],
) -> Result<(Data, Vec<Vec<usize>>), Failure> {
    let ordinals = ordinals(atlas, names)?;
    let Some(dtype) = declared(atlas, names, array)? else {
        return Ok((Data::F64(flat(Vec::new())), Vec::new()));
    };
    macro_rules! typed {
        ($t:ty) => {
            atlas
                .read_run::<$t>(array, &ordinals)
                .await
                .map(Run::into_parts)?
        };
    }
    macro_rules! numeric {
        ($variant:ident, $t:ty) => {{
            let (values, shapes) = typed!($t);
            (Data::$variant(flat(values)), shapes)
        }};
    }
    Ok(match dtype {
        DType::Int8 => numeric!(I8, i8),
        DType::Int16 => numeric!(I16, i16),
        DType::Int32 => numeric!(I32, i32),
        DType::Int64 => numeric!(I64, i64),
        DType::UInt8 => numeric!(U8, u8),
        DType::UInt16 => numeric!(U16, u16),
        DType::UInt32 => numeric!(U32, u32),
        DType::UInt64 => numeric!(U64, u64),
        DType::Float32 => numeric!(F32, f32),
        DType::Float64 => numeric!(F64, f64),
        DType::TimestampNs => {
            let (values, shapes) = typed!(TimestampNs);
            let values = values.into_iter().map(i64::from).collect();
            (Data::Time(flat(values)), shapes)
        }
        DType::String => {
            let (values, shapes) = typed!(String);
            let n = values.len();
            (Data::Text(values, vec![n]), shapes)
        }
        DType::Binary => {
            let (values, shapes) = typed!(Vec<u8>);
            let n = values.len();
            (Data::Bytes(values, vec![n]), shapes)
        }
        other => {
            return Err(Failure::Unsupported(format!(
                "array '{array}' holds {other}, which array-format 0.15.0 cannot read as a \
                 typed array"
            )))
        }
    })
}

/// One dataset's layout of an array, as `run_layouts` returns it.
pub(crate) struct RunLayout {
    pub(crate) shape: Vec<u32>,
    pub(crate) dims: Vec<String>,
    pub(crate) attrs: Vec<(String, Attr)>,
}

/// Shape, dimension names and attributes of `array` in each dataset of `names`, in one pass
/// over the segment (opened once; the footer is in memory, so no data is read).
pub(crate) async fn run_layouts(
    atlas: &Atlas,
    array: &str,
    names: &[String],
) -> Result<Vec<RunLayout>, Failure> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let view = atlas
            .dataset(name)
            .ok_or_else(|| Failure::Atlas(AtlasError::DatasetNotFound(name.clone())))?;
        let layout = view.array_layout(array).await?;
        let attrs = view.array_attributes(array).await?;
        out.push(RunLayout {
            shape: layout.shape,
            dims: layout.dimension_names,
            attrs,
        });
    }
    Ok(out)
}
