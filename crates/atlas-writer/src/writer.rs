//! The writer: datasets in, `data.atlas` out.

use crate::error::WriteError;
use crate::spec::{ArraySpec, DatasetSpec};
use array_format::{
    ArrayWriter, Lz4Codec, NoCompression, WriterConfig, ZstdCodec, DEFAULT_BLOCK_TARGET_SIZE,
};
use atlas_footer::trailer::{encode_header, encode_trailer};
use atlas_footer::{
    Codec, FooterBuilder, IndexPairs, InternedSchema, CONTAINER_OBJECT, DATASETS_SEGMENT,
};
use atlas_model::{from_segment_dtype, validate_name, Attr, NameKind};
use atlas_store::{segment_path, AppendSink, ContainerUpload};
use bytes::Bytes;
use indexmap::IndexMap;
use object_store::path::Path;
use object_store::ObjectStore;
use std::collections::HashSet;
use std::sync::Arc;

/// How a collection is written.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Codec for every data block.
    pub codec: Codec,
    /// zstd level when `codec` is [`Codec::Zstd`].
    pub zstd_level: i32,
    /// Raw bytes packed into one block before it is compressed.
    pub block_target_size: usize,
    /// Recorded in the footer. Supplied by the caller, so output is reproducible.
    pub created_unix_ms: i64,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            codec: Codec::Zstd,
            zstd_level: 3,
            block_target_size: DEFAULT_BLOCK_TARGET_SIZE,
            created_unix_ms: 0,
        }
    }
}

/// What [`AtlasWriter::finish`] wrote (its serde form: the Python package's `Writer.finish()`
/// dict).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WriteSummary {
    /// Datasets written.
    pub datasets: usize,
    /// Segments written, `_datasets` included.
    pub segments: usize,
    /// Size of `data.atlas`.
    pub container_bytes: u64,
    /// Size of the zstd footer frame.
    pub footer_bytes: u64,
}

/// Writes one collection; see the [crate docs](crate).
pub struct AtlasWriter {
    store: Arc<dyn ObjectStore>,
    container: Path,
    options: WriterOptions,
    /// One open array-format writer per array name, in first-seen order.
    segments: IndexMap<String, ArrayWriter>,
    footer: FooterBuilder,
    poisoned: Option<String>,
}

impl std::fmt::Debug for AtlasWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtlasWriter")
            .field("container", &self.container)
            .field("datasets", &self.footer.dataset_count())
            .field("segments", &self.segments.len())
            .finish_non_exhaustive()
    }
}

impl AtlasWriter {
    /// A writer for the collection at `prefix` in `store`. Nothing appears there until
    /// [`finish`](Self::finish) succeeds.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &Path, options: WriterOptions) -> Self {
        Self {
            store,
            container: prefix.clone().join(CONTAINER_OBJECT),
            options,
            segments: IndexMap::new(),
            footer: FooterBuilder::new(),
            poisoned: None,
        }
    }

    /// Number of datasets written so far.
    pub fn dataset_count(&self) -> usize {
        self.footer.dataset_count()
    }

    /// Writes one dataset and returns its ordinal.
    ///
    /// Every check (names, repeats, layouts) runs before the first byte is written, so a refused
    /// dataset leaves the writer as it was. A failure inside array-format after that stops the
    /// writer: every later call returns [`WriteError::Poisoned`].
    pub fn write_dataset(&mut self, mut dataset: DatasetSpec) -> Result<u32, WriteError> {
        if let Some(reason) = &self.poisoned {
            return Err(WriteError::Poisoned(reason.clone()));
        }
        for array in &mut dataset.arrays {
            if array.chunk_shape.is_none() {
                array.chunk_shape = split_chunks(&array.shape, array.payload.dtype());
            }
        }
        self.check(&dataset)?;
        let schema = self.intern_schema(&dataset)?;
        if let Err(e) = self.write_segments(&dataset) {
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        Ok(self.footer.add_dataset(&dataset.name, schema)?)
    }

    fn check(&self, dataset: &DatasetSpec) -> Result<(), WriteError> {
        validate_name(NameKind::Dataset, &dataset.name)?;
        if self.footer.contains_dataset(&dataset.name) {
            return Err(WriteError::DuplicateDataset(dataset.name.clone()));
        }
        let mut arrays = HashSet::new();
        for array in &dataset.arrays {
            validate_name(NameKind::Array, &array.name)?;
            if !arrays.insert(array.name.as_str()) {
                return Err(WriteError::DuplicateArray {
                    dataset: dataset.name.clone(),
                    array: array.name.clone(),
                });
            }
            check_layout(&dataset.name, array)?;
            let owner = || format!("array '{}' of dataset '{}'", array.name, dataset.name);
            check_attrs(&array.attrs, owner)?;
        }
        check_attrs(&dataset.attrs, || format!("dataset '{}'", dataset.name))
    }

    fn intern_schema(&mut self, dataset: &DatasetSpec) -> Result<u32, WriteError> {
        let mut schema = InternedSchema::default();
        for (position, array) in dataset.arrays.iter().enumerate() {
            let name = self.footer.intern_string(&array.name)?;
            let dtype = self
                .footer
                .intern_dtype(&from_segment_dtype(&array.payload.dtype()))?;
            schema.arrays.push((name, dtype));
            if !array.attrs.is_empty() {
                let keys = self.intern_attr_keys(&array.attrs)?;
                // Positions index `arrays`, which a u32 string pool index already bounds.
                let position = u32::try_from(position)
                    .map_err(|_| atlas_footer::builder::BuildError::PoolFull("array"))?;
                schema.array_attrs.push((position, keys));
            }
        }
        schema.attrs = self.intern_attr_keys(&dataset.attrs)?;
        Ok(self.footer.intern_schema(schema)?)
    }

    fn intern_attr_keys(&mut self, attrs: &[(String, Attr)]) -> Result<IndexPairs, WriteError> {
        let mut pairs = IndexPairs::default();
        for (key, value) in attrs {
            pairs.push((
                self.footer.intern_string(key)?,
                self.footer.intern_dtype(&value.dtype())?,
            ));
        }
        Ok(pairs)
    }

    fn write_segments(&mut self, dataset: &DatasetSpec) -> Result<(), WriteError> {
        let name = dataset.name.as_str();
        for array in &dataset.arrays {
            let writer = self.segment(&array.name);
            let failed = |source| WriteError::Segment {
                variable: array.name.clone(),
                source,
            };
            array.payload.write(writer, name, array).map_err(failed)?;
            for (key, value) in &array.attrs {
                writer
                    .set_attribute(name, key, value.to_stored())
                    .map_err(failed)?;
            }
            // Nothing writes this array again: keep its metadata compact until `finish`.
            writer.seal_array(name).map_err(failed)?;
        }
        if !dataset.attrs.is_empty() {
            let writer = self.segment(DATASETS_SEGMENT);
            let failed = |source| WriteError::Segment {
                variable: DATASETS_SEGMENT.to_owned(),
                source,
            };
            // A rank-0 array with no data: it exists to carry the dataset's attributes.
            writer
                .define_array::<u8>(name, Vec::new(), Vec::new(), None, None)
                .map_err(failed)?;
            for (key, value) in &dataset.attrs {
                writer
                    .set_attribute(name, key, value.to_stored())
                    .map_err(failed)?;
            }
            writer.seal_array(name).map_err(failed)?;
        }
        Ok(())
    }

    fn segment(&mut self, variable: &str) -> &mut ArrayWriter {
        let options = &self.options;
        self.segments
            .entry(variable.to_owned())
            .or_insert_with(|| new_array_writer(options))
    }

    /// Writes the container: header, every segment in first-seen order, footer, trailer.
    pub async fn finish(self) -> Result<WriteSummary, WriteError> {
        if let Some(reason) = self.poisoned {
            return Err(WriteError::Poisoned(reason));
        }
        let sink = AppendSink::new(ContainerUpload::new(
            Arc::clone(&self.store),
            self.container.clone(),
        ));
        let AtlasWriter {
            footer,
            segments,
            options,
            ..
        } = self;
        match write_container(&sink, footer, segments, &options).await {
            Ok(summary) => {
                sink.into_upload().await?.finish().await?;
                Ok(summary)
            }
            Err(e) => {
                if let Ok(upload) = sink.into_upload().await {
                    if let Err(abort) = upload.abort().await {
                        tracing::warn!(%abort, "could not abort the container upload");
                    }
                }
                Err(e)
            }
        }
    }
}

async fn write_container(
    sink: &AppendSink,
    mut footer: FooterBuilder,
    segments: IndexMap<String, ArrayWriter>,
    options: &WriterOptions,
) -> Result<WriteSummary, WriteError> {
    sink.append(Bytes::copy_from_slice(&encode_header()))
        .await?;
    let segment_count = segments.len();
    let datasets = footer.dataset_count();
    for (variable, writer) in segments {
        let offset = sink.written().await?;
        let finished = writer
            .finish_unopened(Arc::new(sink.clone()), segment_path())
            .await;
        finished.map_err(|source| WriteError::Segment {
            variable: variable.clone(),
            source,
        })?;
        let len = sink.written().await? - offset;
        footer.add_variable(&variable, offset, len)?;
    }
    let footer_bytes =
        atlas_footer::wire::encode_footer(&footer.finish(options.codec, options.created_unix_ms));
    let footer_len = footer_bytes.len() as u64;
    sink.append(Bytes::from(footer_bytes)).await?;
    sink.append(Bytes::copy_from_slice(&encode_trailer(footer_len)))
        .await?;
    Ok(WriteSummary {
        datasets,
        segments: segment_count,
        container_bytes: sink.written().await?,
        footer_bytes: footer_len,
    })
}

fn new_array_writer(options: &WriterOptions) -> ArrayWriter {
    let size = options.block_target_size;
    match options.codec {
        Codec::None => ArrayWriter::new(WriterConfig {
            block_target_size: size,
            ..WriterConfig::new(NoCompression)
        }),
        Codec::Lz4 => ArrayWriter::new(WriterConfig {
            block_target_size: size,
            ..WriterConfig::new(Lz4Codec)
        }),
        Codec::Zstd => {
            let codec = ZstdCodec::new(options.zstd_level);
            ArrayWriter::new(WriterConfig {
                block_target_size: size,
                ..WriterConfig::new(codec)
            })
        }
    }
}

fn check_attrs(attrs: &[(String, Attr)], owner: impl Fn() -> String) -> Result<(), WriteError> {
    let mut keys = HashSet::new();
    for (key, _) in attrs {
        validate_name(NameKind::AttributeKey, key)?;
        if !keys.insert(key.as_str()) {
            return Err(WriteError::DuplicateAttribute {
                owner: owner(),
                key: key.clone(),
            });
        }
    }
    Ok(())
}

/// Refuses what array-format would silently change: axes past u32, a chunk rank that differs,
/// a zero chunk extent, or dimension names that do not match the rank.
fn check_layout(dataset: &str, array: &ArraySpec) -> Result<(), WriteError> {
    let invalid = |reason: String| WriteError::InvalidLayout {
        dataset: dataset.to_owned(),
        array: array.name.clone(),
        reason,
    };
    let rank = array.shape.len();
    if array.shape.iter().any(|&len| u32::try_from(len).is_err()) {
        return Err(invalid(format!(
            "shape {:?} has an axis longer than u32::MAX",
            array.shape
        )));
    }
    if !array.dimension_names.is_empty() && array.dimension_names.len() != rank {
        return Err(invalid(format!(
            "{} dimension names for {rank} axes",
            array.dimension_names.len()
        )));
    }
    if let Some(chunks) = &array.chunk_shape {
        if chunks.len() != rank {
            return Err(invalid(format!(
                "chunk shape {chunks:?} has {} axes, the shape {rank}",
                chunks.len()
            )));
        }
        let bad_extent = chunks
            .iter()
            .zip(&array.shape)
            .any(|(&c, &s)| (c == 0 && s != 0) || u32::try_from(c).is_err());
        if bad_extent {
            return Err(invalid(format!(
                "chunk shape {chunks:?} does not tile shape {:?}",
                array.shape
            )));
        }
        if let Some(bytes) = chunk_bytes(chunks, &array.shape, array.payload.dtype()) {
            if bytes > MAX_CHUNK_BYTES {
                return Err(invalid(format!(
                    "a chunk of shape {chunks:?} holds {bytes} bytes; array-format addresses \
                     at most {MAX_CHUNK_BYTES} bytes per chunk: give smaller chunks"
                )));
            }
        }
    }
    Ok(())
}

/// The most bytes one chunk may hold: array-format 0.15.0 records a chunk's offset and size
/// within its block as `u32`, and its writer truncates larger values without a word.
const MAX_CHUNK_BYTES: u64 = u32::MAX as u64;

/// The bytes one chunk of fixed-width `dtype` holds (edge chunks are no larger), or `None`
/// for a variable-width type.
fn chunk_bytes(chunks: &[usize], shape: &[usize], dtype: array_format::DType) -> Option<u64> {
    let size = dtype.element_size()? as u64;
    let elements = chunks
        .iter()
        .zip(shape)
        .map(|(&c, &s)| c.min(s.max(1)) as u64)
        .try_fold(1u64, u64::checked_mul);
    Some(
        elements
            .and_then(|n| n.checked_mul(size))
            .unwrap_or(u64::MAX),
    )
}

/// The chunks of an array given none: the whole array as one chunk, unless that holds more
/// than [`MAX_CHUNK_BYTES`]; then the leading axes are split so that each chunk holds about
/// one block's worth ([`DEFAULT_BLOCK_TARGET_SIZE`]), trailing axes whole while they fit.
/// `None` (one chunk) for anything that fits, so what was written before stays the same.
fn split_chunks(shape: &[usize], dtype: array_format::DType) -> Option<Vec<usize>> {
    let whole = chunk_bytes(shape, shape, dtype.clone())?;
    if whole <= MAX_CHUNK_BYTES {
        return None;
    }
    let mut room = (DEFAULT_BLOCK_TARGET_SIZE / dtype.element_size()?).max(1);
    let mut chunks = vec![1; shape.len()];
    for axis in (0..shape.len()).rev() {
        let len = shape[axis].max(1);
        if len <= room {
            chunks[axis] = len;
            room /= len;
        } else {
            chunks[axis] = room.max(1);
            break;
        }
    }
    Some(chunks)
}
