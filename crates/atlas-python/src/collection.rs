//! `Collection`: an open collection, its lookups, reads, statistics and deletes.

use crate::errors::{run, Error, Failure};
use crate::location::Location;
use crate::values::{attr_to_py, dtype_tag, fill_to_py, stat_to_py};
use atlas::format::DType;
use atlas::ndarray::ArrayD;
use atlas::store::{CountingStore, RequestKind};
use atlas::{Atlas, AtlasError, DatasetStats, DatasetView, TimestampNs};
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::sync::Arc;

/// An open collection (`atlas_collections._atlas.Collection`); the Python `Collection` class
/// wraps it. Every method that may make a request releases the GIL while it runs.
#[pyclass(frozen, module = "atlas_collections._atlas")]
pub(crate) struct Collection {
    atlas: Arc<Atlas>,
    counter: CountingStore,
    location: String,
}

/// Array data read from a segment, before it becomes a NumPy array or a list.
pub(crate) enum Data {
    I8(ArrayD<i8>),
    I16(ArrayD<i16>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    U8(ArrayD<u8>),
    U16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
    /// Nanoseconds since the epoch; NumPy views them as `datetime64[ns]`.
    Time(ArrayD<i64>),
    /// Row-major strings and the shape.
    Text(Vec<String>, Vec<usize>),
    /// Row-major byte strings and the shape.
    Bytes(Vec<Vec<u8>>, Vec<usize>),
}

impl Data {
    /// `(tag, value)`: a NumPy array for the fixed-width types, `(flat list, shape)` for
    /// strings and byte strings.
    pub(crate) fn into_py<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        fn tagged<'py>(
            py: Python<'py>,
            tag: &str,
            value: Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyTuple>> {
            PyTuple::new(py, [tag.into_pyobject(py)?.into_any(), value])
        }
        match self {
            Data::I8(a) => tagged(py, "int8", a.into_pyarray(py).into_any()),
            Data::I16(a) => tagged(py, "int16", a.into_pyarray(py).into_any()),
            Data::I32(a) => tagged(py, "int32", a.into_pyarray(py).into_any()),
            Data::I64(a) => tagged(py, "int64", a.into_pyarray(py).into_any()),
            Data::U8(a) => tagged(py, "uint8", a.into_pyarray(py).into_any()),
            Data::U16(a) => tagged(py, "uint16", a.into_pyarray(py).into_any()),
            Data::U32(a) => tagged(py, "uint32", a.into_pyarray(py).into_any()),
            Data::U64(a) => tagged(py, "uint64", a.into_pyarray(py).into_any()),
            Data::F32(a) => tagged(py, "float32", a.into_pyarray(py).into_any()),
            Data::F64(a) => tagged(py, "float64", a.into_pyarray(py).into_any()),
            Data::Time(a) => tagged(py, "timestamp_ns", a.into_pyarray(py).into_any()),
            Data::Text(items, shape) => {
                let list = PyList::new(py, items)?;
                tagged(py, "string", (list, shape).into_pyobject(py)?.into_any())
            }
            Data::Bytes(items, shape) => {
                let list = PyList::new(py, items.iter().map(|b| PyBytes::new(py, b)))?;
                tagged(py, "binary", (list, shape).into_pyobject(py)?.into_any())
            }
        }
    }
}

/// Reads `shape` elements from `start` of `array` in `view`, typed by its declared dtype.
async fn read(
    view: DatasetView<'_>,
    array: &str,
    start: Vec<usize>,
    shape: Vec<usize>,
) -> Result<Data, Failure> {
    let dtype = view
        .schema()
        .array(array)
        .map(|a| a.dtype().clone())
        .ok_or_else(|| AtlasError::ArrayNotFound {
            dataset: view.name().to_owned(),
            array: array.to_owned(),
        })?;
    macro_rules! typed {
        ($variant:ident, $t:ty) => {
            Data::$variant(
                view.read_array::<$t>(array, start, shape)
                    .await?
                    .into_owned(),
            )
        };
    }
    Ok(match dtype {
        DType::Int8 => typed!(I8, i8),
        DType::Int16 => typed!(I16, i16),
        DType::Int32 => typed!(I32, i32),
        DType::Int64 => typed!(I64, i64),
        DType::UInt8 => typed!(U8, u8),
        DType::UInt16 => typed!(U16, u16),
        DType::UInt32 => typed!(U32, u32),
        DType::UInt64 => typed!(U64, u64),
        DType::Float32 => typed!(F32, f32),
        DType::Float64 => typed!(F64, f64),
        DType::TimestampNs => {
            let values = view.read_array::<TimestampNs>(array, start, shape).await?;
            Data::Time(values.map(|t| i64::from(*t)))
        }
        DType::String => {
            let values = view.read_array::<String>(array, start, shape).await?;
            let shape = values.shape().to_vec();
            Data::Text(values.iter().cloned().collect(), shape)
        }
        DType::Binary => {
            let values = view.read_array::<Vec<u8>>(array, start, shape).await?;
            let shape = values.shape().to_vec();
            Data::Bytes(values.iter().cloned().collect(), shape)
        }
        other => {
            return Err(Failure::Unsupported(format!(
                "array '{array}' of dataset '{}' holds {other}, which array-format 0.15.0 \
                 cannot read as a typed array",
                view.name()
            )))
        }
    })
}

fn dataset<'a>(atlas: &'a Atlas, name: &str) -> Result<DatasetView<'a>, Failure> {
    atlas
        .dataset(name)
        .ok_or_else(|| Failure::Atlas(AtlasError::DatasetNotFound(name.to_owned())))
}

fn stats_row<'py>(py: Python<'py>, row: &DatasetStats) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("dataset", row.dataset.as_str())?;
    dict.set_item("ordinal", row.ordinal)?;
    dict.set_item("min", stat_to_py(py, row.min.as_ref())?)?;
    dict.set_item("max", stat_to_py(py, row.max.as_ref())?)?;
    dict.set_item("null_count", row.null_count)?;
    dict.set_item("row_count", row.row_count)?;
    Ok(dict)
}

#[pymethods]
impl Collection {
    /// Opens the collection at `location`: a directory, a `file://` URL or an object-store URL.
    #[staticmethod]
    fn open(py: Python<'_>, location: String) -> PyResult<Self> {
        let target = location.clone();
        let (atlas, counter) = run(py, &location, async move {
            Location::parse(&target)?.open().await
        })?;
        Ok(Self {
            atlas: Arc::new(atlas),
            counter,
            location,
        })
    }

    /// The location it was opened from.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Live dataset names, in ordinal order.
    fn names(&self) -> Vec<String> {
        self.atlas.datasets().map(|d| d.name().to_owned()).collect()
    }

    /// Number of live datasets.
    fn dataset_count(&self) -> usize {
        self.atlas.dataset_count()
    }

    /// Whether a live dataset has this name.
    fn contains(&self, name: &str) -> bool {
        self.atlas.dataset(name).is_some()
    }

    /// Variable (segment) names, `_datasets` included, in container order.
    fn variables(&self) -> Vec<String> {
        self.atlas.variables().map(|(n, _)| n.to_owned()).collect()
    }

    /// `([(array, dtype tag, [attribute keys])], [dataset attribute keys])`, from the footer.
    #[allow(clippy::type_complexity)]
    fn schema(&self, name: &str) -> PyResult<(Vec<(String, String, Vec<String>)>, Vec<String>)> {
        let view = dataset(&self.atlas, name).map_err(|f| Error::at(&self.location, f))?;
        let schema = view.schema();
        let arrays = schema
            .arrays()
            .map(|a| {
                (
                    a.name().to_owned(),
                    dtype_tag(a.dtype()),
                    a.attrs().map(|(k, _)| k.to_owned()).collect(),
                )
            })
            .collect();
        let attrs = schema.attrs().map(|(k, _)| k.to_owned()).collect();
        Ok((arrays, attrs))
    }

    /// `(dtype tag, shape, chunk shape, dimension names, fill value)` of one array.
    #[allow(clippy::type_complexity)]
    fn layout<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
    ) -> PyResult<(String, Vec<u32>, Vec<u32>, Vec<String>, Bound<'py, PyAny>)> {
        let atlas = &self.atlas;
        let layout = run(py, &self.location, async move {
            dataset(atlas, name)?
                .array_layout(array)
                .await
                .map_err(Failure::from)
        })?;
        Ok((
            dtype_tag(&layout.dtype),
            layout.shape,
            layout.chunk_shape,
            layout.dimension_names,
            fill_to_py(py, layout.fill_value.as_ref())?,
        ))
    }

    /// Reads `shape` elements from `start` (both empty: the whole array) as `(tag, data)`.
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
        start: Vec<usize>,
        shape: Vec<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let atlas = &self.atlas;
        let data = run(py, &self.location, async move {
            read(dataset(atlas, name)?, array, start, shape).await
        })?;
        data.into_py(py)
    }

    /// Reads `array` whole from each dataset in `names`, in one call.
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        names: Vec<String>,
        array: &str,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let atlas = &self.atlas;
        let all = run(py, &self.location, async move {
            let mut out = Vec::with_capacity(names.len());
            for name in &names {
                out.push(read(dataset(atlas, name)?, array, Vec::new(), Vec::new()).await?);
            }
            Ok::<_, Failure>(out)
        })?;
        all.into_iter().map(|d| d.into_py(py)).collect()
    }

    /// Reads `array` whole from each dataset in `names` through one run read
    /// (`Atlas::read_run`): `((tag, flat data), [shape per dataset])`.
    #[allow(clippy::type_complexity)]
    fn read_run<'py>(
        &self,
        py: Python<'py>,
        array: &str,
        names: Vec<String>,
    ) -> PyResult<(Bound<'py, PyTuple>, Vec<Vec<usize>>)> {
        let atlas = &self.atlas;
        let (data, shapes) = run(py, &self.location, async move {
            crate::run::read_run(atlas, array, &names).await
        })?;
        Ok((data.into_py(py)?, shapes))
    }

    /// `[(shape, dimension names, [(key, (tag, value))])]` of `array` in each of `names`.
    #[allow(clippy::type_complexity)]
    fn run_layouts<'py>(
        &self,
        py: Python<'py>,
        array: &str,
        names: Vec<String>,
    ) -> PyResult<Vec<(Vec<u32>, Vec<String>, Vec<(String, Bound<'py, PyTuple>)>)>> {
        let atlas = &self.atlas;
        let layouts = run(py, &self.location, async move {
            crate::run::run_layouts(atlas, array, &names).await
        })?;
        layouts
            .into_iter()
            .map(|l| {
                let attrs = l
                    .attrs
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), attr_to_py(py, v)?)))
                    .collect::<PyResult<_>>()?;
                Ok((l.shape, l.dims, attrs))
            })
            .collect()
    }

    /// Dataset-level attributes as `[(key, (tag, value))]`, in the order they were written.
    fn attributes<'py>(
        &self,
        py: Python<'py>,
        name: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        let atlas = &self.atlas;
        let attrs = run(py, &self.location, async move {
            dataset(atlas, name)?
                .attributes()
                .await
                .map_err(Failure::from)
        })?;
        attrs
            .into_iter()
            .map(|(k, v)| Ok((k, attr_to_py(py, &v)?)))
            .collect()
    }

    /// An array's attributes as `[(key, (tag, value))]`.
    fn array_attributes<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        let atlas = &self.atlas;
        let attrs = run(py, &self.location, async move {
            dataset(atlas, name)?
                .array_attributes(array)
                .await
                .map_err(Failure::from)
        })?;
        attrs
            .into_iter()
            .map(|(k, v)| Ok((k, attr_to_py(py, &v)?)))
            .collect()
    }

    /// Dataset attribute `key` of every live dataset that has it: `[(dataset, (tag, value))]`.
    fn attributes_by_dataset<'py>(
        &self,
        py: Python<'py>,
        key: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        let atlas = &self.atlas;
        let rows = run(py, &self.location, async move {
            atlas.attributes_by_dataset(key).await
        })?;
        rows.into_iter()
            .map(|(k, v)| Ok((k, attr_to_py(py, &v)?)))
            .collect()
    }

    /// `array`'s stored statistics folded over every live dataset.
    fn stats<'py>(&self, py: Python<'py>, array: &str) -> PyResult<Bound<'py, PyDict>> {
        let atlas = &self.atlas;
        let total = run(
            py,
            &self.location,
            async move { atlas.array_stats(array).await },
        )?;
        let dict = PyDict::new(py);
        dict.set_item("datasets", total.datasets)?;
        dict.set_item("min", stat_to_py(py, total.min.as_ref())?)?;
        dict.set_item("max", stat_to_py(py, total.max.as_ref())?)?;
        dict.set_item("null_count", total.null_count)?;
        dict.set_item("row_count", total.row_count)?;
        Ok(dict)
    }

    /// One statistics row per live dataset holding `array`, in ordinal order.
    fn stats_by_dataset<'py>(
        &self,
        py: Python<'py>,
        array: &str,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let atlas = &self.atlas;
        let rows = run(py, &self.location, async move {
            atlas.array_stats_by_dataset(array).await
        })?;
        rows.iter().map(|r| stats_row(py, r)).collect()
    }

    /// One dataset's statistics for `array`.
    fn dataset_stats<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let atlas = &self.atlas;
        let row = run(py, &self.location, async move {
            dataset(atlas, name)?
                .array_stats(array)
                .await
                .map_err(Failure::from)
        })?;
        stats_row(py, &row)
    }

    /// Names of the live datasets meeting every condition, in ordinal order: attribute
    /// conditions `[(key, [(tag, value)])]`, statistic conditions `[(array, stat, op, (tag,
    /// value))]` (see `atlas::Atlas::select`).
    #[allow(clippy::type_complexity)]
    fn select(
        &self,
        py: Python<'_>,
        attrs: Vec<(String, Vec<(String, Bound<'_, PyAny>)>)>,
        stats: Vec<(String, String, String, (String, Bound<'_, PyAny>))>,
    ) -> PyResult<Vec<String>> {
        let attrs = attrs
            .into_iter()
            .map(|(key, values)| {
                let values = values
                    .iter()
                    .map(|(tag, v)| crate::select::value_from_py(tag, v))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok((key, values))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let stats = stats
            .into_iter()
            .map(|(array, stat, op, (tag, v))| {
                Ok((array, stat, op, crate::select::value_from_py(&tag, &v)?))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let atlas = &self.atlas;
        run(py, &self.location, async move {
            let selection = crate::select::selection(attrs, stats)?;
            let ordinals = atlas.select(&selection).await?;
            Ok::<_, Failure>(
                ordinals
                    .into_iter()
                    .filter_map(|o| atlas.footer().datasets.name(o as usize).map(str::to_owned))
                    .collect(),
            )
        })
    }

    /// Hides the named datasets (read-merge-commit of `deleted.mask`, retried on conflict).
    fn delete<'py>(&self, py: Python<'py>, names: Vec<String>) -> PyResult<Bound<'py, PyDict>> {
        let atlas = &self.atlas;
        let report = run(
            py,
            &self.location,
            async move { atlas.delete(&names).await },
        )?;
        let dict = PyDict::new(py);
        dict.set_item("newly_deleted", report.newly_deleted)?;
        dict.set_item("total_deleted", report.total_deleted)?;
        dict.set_item("attempts", report.attempts)?;
        Ok(dict)
    }

    /// Requests this collection has sent to its store since it was opened (or last reset).
    fn request_count(&self) -> usize {
        self.counter.count()
    }

    /// Those requests as `[(kind, object path)]`.
    fn requests(&self) -> Vec<(String, String)> {
        self.counter
            .requests()
            .into_iter()
            .map(|r| {
                let kind = match r.kind {
                    RequestKind::Get => "GET".to_owned(),
                    RequestKind::GetRange(range) => format!("GET {range}"),
                    RequestKind::Head => "HEAD".to_owned(),
                    RequestKind::Put => "PUT".to_owned(),
                    RequestKind::PutMultipart => "PUT multipart".to_owned(),
                    RequestKind::List => "LIST".to_owned(),
                    RequestKind::Other => "other".to_owned(),
                };
                (kind, r.path)
            })
            .collect()
    }

    /// Forgets the requests counted so far.
    fn reset_requests(&self) {
        self.counter.reset();
    }

    /// Whether deletes commit through the local directory lock (else conditional PUT).
    fn deletes_with_local_lock(&self) -> bool {
        format!("{:?}", self.atlas.committer()).starts_with("LocalFlockCommitter")
    }

    fn __repr__(&self) -> String {
        format!(
            "<atlas_collections Collection {:?}: {} datasets>",
            self.location,
            self.atlas.dataset_count()
        )
    }
}
