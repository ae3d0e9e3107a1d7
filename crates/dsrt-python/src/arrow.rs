//! Arrow record batches handed to Python through the Arrow PyCapsule interface.
//!
//! An [`ArrowBatch`] owns a Rust `RecordBatch` and exports it with `__arrow_c_array__` (the C
//! data interface in PyCapsules), so `pyarrow.record_batch(batch)` takes the same buffers
//! without copying them and NumPy and `torch.frombuffer` read those buffers in place. The
//! exported buffers keep the batch's memory alive however long the consumer holds them: the
//! mapped `metadata.arrow` of a cache stays mapped under a table Python still holds.
//!
//! A batch pickles as an Arrow IPC stream (a DataLoader worker hands its batches to the
//! training process that way), so no layout private to this package crosses a process.

use arrow_array::ffi::to_ffi;
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyList, PyTuple};

/// An Arrow record batch owned by Rust: `pyarrow.record_batch(batch)` reads it without a
/// copy (Arrow PyCapsule interface). Pickles as an Arrow IPC stream.
#[pyclass(module = "datasetrt._native", name = "ArrowBatch", frozen)]
pub(crate) struct ArrowBatch {
    pub(crate) batch: RecordBatch,
}

fn arrow_error(context: &str, e: &arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(format!("{context}: {e}"))
}

#[pymethods]
impl ArrowBatch {
    /// The batch as a struct array in the C data interface: a `(schema, array)` pair of
    /// PyCapsules. A requested schema is not applied (the protocol lets the consumer cast).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let data = StructArray::from(self.batch.clone()).into_data();
        let (array, schema) = to_ffi(&data).map_err(|e| arrow_error("exporting a batch", &e))?;
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    /// The batch's schema (as a struct type) in the C data interface.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let fields = self.batch.schema().fields().clone();
        let schema = FFI_ArrowSchema::try_from(arrow_schema::DataType::Struct(fields))
            .map_err(|e| arrow_error("exporting a schema", &e))?;
        PyCapsule::new_with_value(py, schema, c"arrow_schema")
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Self>()
            .is_ok_and(|other| other.get().batch == self.batch)
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let batch = self.batch.clone();
        let bytes = py
            .detach(move || ipc_bytes(&batch))
            .map_err(|e| arrow_error("pickling a batch", &e))?;
        let rebuild = py
            .import("datasetrt._native")?
            .getattr("_arrow_batch_from_ipc")?;
        Ok((rebuild, (PyBytes::new(py, &bytes),)))
    }

    /// The batch as a `pyarrow.RecordBatch` (the same buffers).
    fn to_pyarrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("pyarrow")?
            .call_method1("record_batch", (slf,))
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self
            .batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        format!(
            "ArrowBatch(<{} rows: {}>)",
            self.batch.num_rows(),
            names.join(", ")
        )
    }
}

/// `batch` as one Arrow IPC stream.
fn ipc_bytes(batch: &RecordBatch) -> Result<Vec<u8>, arrow_schema::ArrowError> {
    let mut out = Vec::with_capacity(batch.get_array_memory_size() + 1024);
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut out, batch.schema_ref())?;
    writer.write(batch)?;
    writer.finish()?;
    drop(writer);
    Ok(out)
}

/// `_arrow_batch_from_ipc(data)`: the `ArrowBatch` an Arrow IPC stream of one batch holds
/// (how a pickled batch is rebuilt).
#[pyfunction]
pub(crate) fn _arrow_batch_from_ipc(py: Python<'_>, data: &[u8]) -> PyResult<ArrowBatch> {
    let read = py.detach(|| -> Result<RecordBatch, arrow_schema::ArrowError> {
        let mut reader = arrow_ipc::reader::StreamReader::try_new(data, None)?;
        let batch = reader.next().transpose()?.ok_or_else(|| {
            arrow_schema::ArrowError::IpcError("the stream holds no record batch".into())
        })?;
        Ok(batch)
    });
    let batch = read.map_err(|e| arrow_error("reading a pickled batch", &e))?;
    Ok(ArrowBatch { batch })
}

/// `batches` (all of `schema`) as one `pyarrow.Table` over the same buffers.
pub(crate) fn table<'py>(
    py: Python<'py>,
    schema: arrow_schema::SchemaRef,
    batches: &[RecordBatch],
) -> PyResult<Bound<'py, PyAny>> {
    let pa = py.import("pyarrow")?;
    let exported = PyList::empty(py);
    if batches.is_empty() {
        // A table of no rows still has its schema.
        let batch = RecordBatch::new_empty(schema);
        exported.append(pa.call_method1("record_batch", (ArrowBatch { batch },))?)?;
    }
    for batch in batches {
        let batch = batch.clone();
        exported.append(pa.call_method1("record_batch", (ArrowBatch { batch },))?)?;
    }
    pa.getattr("Table")?
        .call_method1("from_batches", (exported,))
}
