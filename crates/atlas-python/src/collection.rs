//! `Collection`: an open collection, its lookups, reads, statistics and deletes.

use crate::errors::{run, Error, Failure};
use crate::values::{attr_to_py, fill_to_py, stat_to_py};
use atlas::store::CountingStore;
use atlas::{ArrayData, At, Atlas, DatasetStats};
use numpy::IntoPyArray;
use object_access::StoreLocation;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::sync::Arc;

/// The requests an open collection keeps for `Collection.requests()`: the counts cover every
/// request, the list the most recent this many, so a collection read a million times stays
/// the same size.
const RECENT_REQUESTS: usize = 1024;

/// An open collection (`atlas_collections._atlas.Collection`); the Python `Collection` class
/// wraps it. Every method that may make a request releases the GIL while it runs.
#[pyclass(frozen, module = "atlas_collections._atlas")]
pub(crate) struct Collection {
    atlas: Arc<Atlas>,
    counter: CountingStore,
    location: String,
}

/// `(tag, value)` of read data: a NumPy array for the fixed-width types, `(flat list, shape)`
/// for strings and byte strings; timestamps as nanoseconds, which NumPy views as
/// `datetime64[ns]`.
fn data_to_py(py: Python<'_>, data: ArrayData) -> PyResult<(String, Bound<'_, PyAny>)> {
    let tag = data.dtype().name();
    macro_rules! numpy {
        ($($variant:ident)*) => {
            match data {
                $(ArrayData::$variant(a) => a.into_pyarray(py).into_any(),)*
                ArrayData::TimestampNs(a) => a.mapv(i64::from).into_pyarray(py).into_any(),
                ArrayData::String(a) => {
                    let list = PyList::new(py, a.iter())?;
                    (list, a.shape().to_vec()).into_pyobject(py)?.into_any()
                }
                ArrayData::Binary(a) => {
                    let list = PyList::new(py, a.iter().map(|b| PyBytes::new(py, b)))?;
                    (list, a.shape().to_vec()).into_pyobject(py)?.into_any()
                }
            }
        };
    }
    let value = numpy!(Int8 Int16 Int32 Int64 UInt8 UInt16 UInt32 UInt64 Float32 Float64);
    Ok((tag, value))
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

/// `[(key, (tag, value))]` of attributes.
fn attrs_to_py<'py>(
    py: Python<'py>,
    attrs: &[(String, atlas::Attr)],
) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
    attrs
        .iter()
        .map(|(k, v)| Ok((k.clone(), attr_to_py(py, v)?)))
        .collect()
}

#[pymethods]
impl Collection {
    /// Opens the collection at `location`: a directory, a `file://` URL or an object-store
    /// URL (`Atlas::open_location`, as the `atlas` command opens one), whose store `options`
    /// (object_store's option names) override the environment's, behind a request counter.
    ///
    /// `version`: that version of a growing collection (`docs/format/growing.md`), else the
    /// latest; `tag`: the version that tag names (the caller passes one of the two at most).
    #[staticmethod]
    #[pyo3(signature = (location, options = None, version = None, tag = None))]
    fn open(
        py: Python<'_>,
        location: String,
        options: Option<Vec<(String, String)>>,
        version: Option<u64>,
        tag: Option<String>,
    ) -> PyResult<Self> {
        let options = options.unwrap_or_default();
        let place = StoreLocation::parse_with_options(&location, &options)
            .map_err(|e| Error::at(&location, Failure::Location(e.reason())))?;
        let at = At::of(version, tag.as_deref());
        let opened = Atlas::open_location_counted(&place, at, RECENT_REQUESTS);
        let (atlas, counter) = run(py, &location, opened)?;
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

    /// The version open of a growing collection; `None` for a plain collection.
    #[getter]
    fn version(&self) -> Option<u64> {
        self.atlas.version()
    }

    /// The versions of a growing collection up to the one open, oldest first:
    /// `(version, created_unix_ms, datasets in its part, part id, kind, datasets hidden)`,
    /// kind `append`, `replace` (an append that hid the datasets it replaced) or `compact`;
    /// empty for a plain collection.
    fn log(&self) -> Vec<(u64, i64, u64, String, &'static str, usize)> {
        (self.atlas.commits().iter())
            .map(|c| {
                (
                    c.version,
                    c.created_unix_ms,
                    c.datasets,
                    c.part.clone(),
                    c.label(),
                    c.hides.len(),
                )
            })
            .collect()
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
        let view = self
            .atlas
            .dataset_named(name)
            .map_err(|e| Error::at(&self.location, e))?;
        let schema = view.schema();
        let arrays = (schema.arrays())
            .map(|a| {
                let keys = a.attrs().map(|(k, _)| k.to_owned()).collect();
                (a.name().to_owned(), a.dtype().name(), keys)
            })
            .collect();
        Ok((arrays, schema.attrs().map(|(k, _)| k.to_owned()).collect()))
    }

    /// `(dtype tag, shape, chunk shape, dimension names, fill value)` of one array.
    #[allow(clippy::type_complexity)]
    fn layout<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
    ) -> PyResult<(String, Vec<u32>, Vec<u32>, Vec<String>, Bound<'py, PyAny>)> {
        let layout = run(py, &self.location, async move {
            self.atlas.dataset_named(name)?.array_layout(array).await
        })?;
        let fill = fill_to_py(py, layout.fill_value.as_ref())?;
        let tag = layout.dtype.name();
        Ok((
            tag,
            layout.shape,
            layout.chunk_shape,
            layout.dimension_names,
            fill,
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
    ) -> PyResult<(String, Bound<'py, PyAny>)> {
        let data = run(py, &self.location, async move {
            self.atlas
                .dataset_named(name)?
                .read_data(array, start, shape)
                .await
        })?;
        data_to_py(py, data)
    }

    /// Reads `array` whole from each dataset in `names`, in one call.
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        names: Vec<String>,
        array: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let all = run(py, &self.location, self.atlas.read_data_each(&names, array))?;
        all.into_iter().map(|d| data_to_py(py, d)).collect()
    }

    /// Reads `array` whole from each dataset in `names` through one run read
    /// (`Atlas::read_run`): `((tag, flat data), [shape per dataset])`.
    #[allow(clippy::type_complexity)]
    fn read_run<'py>(
        &self,
        py: Python<'py>,
        array: &str,
        names: Vec<String>,
    ) -> PyResult<((String, Bound<'py, PyAny>), Vec<Vec<usize>>)> {
        let read = run(
            py,
            &self.location,
            self.atlas.read_run_data_named(array, &names),
        )?;
        let empty = || {
            (
                ArrayData::Float64(atlas::ndarray::Array1::zeros(0).into_dyn()),
                Vec::new(),
            )
        };
        let (data, shapes) = read.unwrap_or_else(empty);
        Ok((data_to_py(py, data)?, shapes))
    }

    /// `[(shape, dimension names, [(key, (tag, value))])]` of `array` in each of `names`, in
    /// one pass over the segment (opened once; the footer is in memory, so no data is read).
    #[allow(clippy::type_complexity)]
    fn run_layouts<'py>(
        &self,
        py: Python<'py>,
        array: &str,
        names: Vec<String>,
    ) -> PyResult<Vec<(Vec<u32>, Vec<String>, Vec<(String, Bound<'py, PyTuple>)>)>> {
        let layouts = run(py, &self.location, self.atlas.array_layouts(array, &names))?;
        (layouts.into_iter())
            .map(|(l, attrs)| Ok((l.shape, l.dimension_names, attrs_to_py(py, &attrs)?)))
            .collect()
    }

    /// Dataset-level attributes as `[(key, (tag, value))]`, in the order they were written.
    fn attributes<'py>(
        &self,
        py: Python<'py>,
        name: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        let attrs = run(py, &self.location, async move {
            self.atlas.dataset_named(name)?.attributes().await
        })?;
        attrs_to_py(py, &attrs)
    }

    /// An array's attributes as `[(key, (tag, value))]`.
    fn array_attributes<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        let attrs = run(py, &self.location, async move {
            self.atlas
                .dataset_named(name)?
                .array_attributes(array)
                .await
        })?;
        attrs_to_py(py, &attrs)
    }

    /// Dataset attribute `key` of every live dataset that has it: `[(dataset, (tag, value))]`.
    fn attributes_by_dataset<'py>(
        &self,
        py: Python<'py>,
        key: &str,
    ) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        let rows = run(py, &self.location, self.atlas.attributes_by_dataset(key))?;
        attrs_to_py(py, &rows)
    }

    /// `array`'s stored statistics folded over every live dataset.
    fn stats<'py>(&self, py: Python<'py>, array: &str) -> PyResult<Bound<'py, PyDict>> {
        let total = run(py, &self.location, self.atlas.array_stats(array))?;
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
        let rows = run(py, &self.location, self.atlas.array_stats_by_dataset(array))?;
        rows.iter().map(|r| stats_row(py, r)).collect()
    }

    /// One dataset's statistics for `array`.
    fn dataset_stats<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        array: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let row = run(py, &self.location, async move {
            self.atlas.dataset_named(name)?.array_stats(array).await
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
        let selection = crate::select::selection(&self.location, attrs, stats)?;
        run(py, &self.location, self.atlas.select_names(&selection))
    }

    /// Hides the named datasets (read-merge-commit of `deleted.mask`, retried on conflict).
    fn delete<'py>(&self, py: Python<'py>, names: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
        let report = run(py, &self.location, self.atlas.delete(&names))?;
        py_support::to_python(py, &report)
    }

    /// Requests this collection has sent to its store since it was opened (or last reset).
    fn request_count(&self) -> usize {
        self.counter.count()
    }

    /// Those requests as `[(kind, object path)]`.
    fn requests(&self) -> Vec<(String, String)> {
        (self.counter.requests().into_iter())
            .map(|r| (r.kind.to_string(), r.path))
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
        let count = self.atlas.dataset_count();
        format!(
            "<atlas_collections Collection {:?}: {count} datasets>",
            self.location
        )
    }
}
