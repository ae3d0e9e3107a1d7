//! Read-only view of a finished file.
//!
//! [`ArrayFile::open`] reads the footer once, validates it, and walks the
//! archived form straight into the in-memory one: one [`ArrayInfo`] per
//! array in file order, a name index, and one attribute column per distinct
//! key. No owned copy of the footer is made on the way. Data blocks are read
//! on demand through an optional cache.
//!
//! Attributes are stored key-major: `columns[key][array]`. One attribute
//! across every array is a slice borrow, and one attribute of one array is
//! two lookups and an index.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use ecow::EcoString;
use rkyv::api::deserialize_using;
use rkyv::de::Pool;

use crate::{
    array::ArrayElement,
    attr::{AttributeValue, DiskValue},
    block::{BlockMeta, CodecId},
    block_cache::BlockCache,
    codec::decompress_by_id,
    dtype::DType,
    error::{Error, Result},
    footer::{access_footer, aligned_footer_bytes, find_chunk, read_footer_bytes},
    layout::{ChunkEntry, FillValue},
    nd,
    stats::ArrayStats,
    storage::{ObjectStoreBackend, Storage},
};

/// Default byte budget for the decompressed-block cache (256 MiB).
pub const DEFAULT_CACHE_CAPACITY: usize = 256 * 1024 * 1024;
/// Default byte budget for the raw I/O slab cache (64 MiB). Useful for
/// object-store workloads, where a round trip is expensive.
pub const DEFAULT_IO_CACHE_CAPACITY: usize = 64 * 1024 * 1024;

/// The most bytes one ranged read of [`ArrayFile::prefetch_arrays`] covers
/// (64 MiB): spans longer than that are split, bounding what one read holds.
pub const PREFETCH_SPAN_MAX: u64 = 64 * 1024 * 1024;

/// Options for opening an [`ArrayFile`].
///
/// A file needs no codec to open: every block records its own.
pub struct ReadConfig {
    /// Byte budget for this file's decompressed-block cache.
    ///
    /// Ignored when [`cache`](Self::cache) is `Some`.
    pub cache_capacity: usize,
    /// Byte budget for this file's raw I/O slab cache. `0` disables it.
    ///
    /// Ignored when [`cache`](Self::cache) is `Some`.
    pub io_cache_capacity: usize,
    /// A cache to share across files. Entries are keyed by `(path, block)`,
    /// so files do not collide. When `Some`, the two budgets above are ignored.
    pub cache: Option<Arc<BlockCache>>,
    /// Refuse, at open, a block whose table entry claims more decoded bytes
    /// than its chunks reach (patched in; off by default, as in 0.15.0). A file
    /// whose chunks were each written once never has one; with this off, such
    /// a block is decoded whole to read any chunk in it.
    pub exact_blocks: bool,
}

impl Default for ReadConfig {
    fn default() -> Self {
        Self {
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            io_cache_capacity: DEFAULT_IO_CACHE_CAPACITY,
            cache: None,
            exact_blocks: false,
        }
    }
}

impl ReadConfig {
    pub(crate) fn resolve_cache(&self) -> Option<Arc<BlockCache>> {
        if let Some(c) = &self.cache {
            return Some(Arc::clone(c));
        }
        if self.cache_capacity == 0 {
            return None;
        }
        Some(Arc::new(BlockCache::new(
            self.cache_capacity as u64,
            self.io_cache_capacity as u64,
        )))
    }
}

/// Metadata of one array, as stored in the file.
#[derive(Debug, Clone)]
pub struct ArrayInfo {
    /// Unique name within the file.
    pub name: EcoString,
    /// Element type.
    pub dtype: DType,
    /// Length of each dimension.
    pub shape: Vec<u32>,
    /// Name of each dimension.
    pub dimension_names: Vec<String>,
    /// Extent of one chunk along each dimension.
    pub chunk_shape: Vec<u32>,
    /// Fill value for unwritten elements. `None` means zero or empty.
    pub fill_value: Option<FillValue>,
    /// Aggregate statistics over every chunk, if the writer computed them.
    pub stats: Option<ArrayStats>,
    /// Written chunks, sorted by coordinate.
    chunks: Vec<ChunkEntry>,
}

impl ArrayInfo {
    /// Coordinates of every written chunk, in sorted order.
    pub fn written_chunks(&self) -> impl Iterator<Item = &[u32]> {
        self.chunks.iter().map(|e| e.coord.as_slice())
    }

    /// Number of elements in the chunk at `coord`. Edge chunks are clipped to
    /// the array shape.
    /// Checks what reads index with (patched in; 0.15.0 trusted the footer
    /// and panicked on a damaged one): one chunk extent per axis, none zero;
    /// every written chunk's coordinate has one entry per axis and lies in
    /// the chunk grid; coordinates are strictly increasing (the lookup is a
    /// binary search); every chunk's bytes lie inside its block.
    fn validate(&self, blocks: &[BlockMeta]) -> Result<()> {
        let bad = |what: String| Error::InvalidFooter(format!("array '{}': {what}", self.name));
        let ndim = self.shape.len();
        if self.chunk_shape.len() != ndim || self.chunk_shape.contains(&0) {
            return Err(bad(format!(
                "chunk shape {:?} does not tile shape {:?}",
                self.chunk_shape, self.shape
            )));
        }
        let grid: Vec<u32> = self
            .shape
            .iter()
            .zip(&self.chunk_shape)
            .map(|(&len, &chunk)| len.div_ceil(chunk))
            .collect();
        let mut previous: Option<&[u32]> = None;
        for entry in &self.chunks {
            let coord = entry.coord.as_slice();
            if coord.len() != ndim || coord.iter().zip(&grid).any(|(&c, &n)| c >= n) {
                return Err(bad(format!(
                    "chunk {coord:?} lies outside the grid {grid:?}"
                )));
            }
            if previous.is_some_and(|p| p >= coord) {
                return Err(bad(format!("chunk {coord:?} is out of order")));
            }
            previous = Some(coord);
            let address = &entry.address;
            let block = blocks
                .get(address.block_id.0 as usize)
                .ok_or(Error::BlockOutOfRange {
                    block_id: address.block_id.0,
                })?;
            if u64::from(address.offset) + u64::from(address.size) > block.uncompressed_size {
                return Err(bad(format!(
                    "chunk {coord:?} ends at {}, past block {} of {} bytes",
                    u64::from(address.offset) + u64::from(address.size),
                    address.block_id.0,
                    block.uncompressed_size
                )));
            }
        }
        Ok(())
    }

    fn chunk_len(&self, coord: &[u32]) -> usize {
        self.chunk_shape
            .iter()
            .enumerate()
            .map(|(i, &cs)| {
                let axis_len = self.shape[i] as usize;
                let start = coord[i] as usize * cs as usize;
                (cs as usize).min(axis_len.saturating_sub(start))
            })
            .product()
    }
}

/// A finished, read-only array file. See the [module docs](self).
pub struct ArrayFile {
    storage: Arc<dyn Storage>,
    /// Cache key for this file's blocks.
    path: Arc<str>,
    cache: Option<Arc<BlockCache>>,
    /// Block table; block ids are dense, so `blocks[id]` is the block.
    blocks: Vec<BlockMeta>,
    /// Every array, in file order.
    arrays: Vec<ArrayInfo>,
    /// Array name to position in `arrays`.
    by_name: HashMap<EcoString, usize>,
    /// Every distinct attribute key, in order of first use.
    keys: Vec<EcoString>,
    /// Key to position in `keys`.
    key_ids: HashMap<EcoString, usize>,
    /// `columns[k][i]` is the value of `keys[k]` on `arrays[i]`.
    columns: Vec<Vec<Option<AttributeValue>>>,
}

impl std::fmt::Debug for ArrayFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayFile")
            .field("path", &self.path)
            .field("arrays", &self.arrays.len())
            .field("blocks", &self.blocks.len())
            .finish_non_exhaustive()
    }
}

// ── Opening ──────────────────────────────────────────────────────────

impl ArrayFile {
    /// Opens the file at `path` in `store`.
    pub async fn open(
        store: Arc<dyn object_store::ObjectStore>,
        path: object_store::path::Path,
        config: ReadConfig,
    ) -> Result<Self> {
        let key: Arc<str> = Arc::from(path.as_ref());
        let storage: Arc<dyn Storage> = Arc::new(ObjectStoreBackend::new(store, path));
        let file = Self::open_storage(storage, key, config.resolve_cache()).await?;
        if config.exact_blocks {
            file.check_exact_blocks()?;
        }
        Ok(file)
    }

    /// Opens a file from any [`Storage`]. `path` is only the cache key.
    pub(crate) async fn open_storage(
        storage: Arc<dyn Storage>,
        path: Arc<str>,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Self> {
        let (bytes, data_end) = read_footer_bytes(&*storage).await?;
        Self::from_footer_bytes(&bytes, data_end, storage, path, cache)
    }

    /// Builds the in-memory form from footer bytes (trailer included) of a
    /// file whose data region is `0..data_end`.
    ///
    /// The archive is validated once and then walked in place. The two pools
    /// are decoded once; every attribute cell is then a clone from the value
    /// pool, so a value shared by many arrays is one allocation.
    pub(crate) fn from_footer_bytes(
        data: &[u8],
        data_end: u64,
        storage: Arc<dyn Storage>,
        path: Arc<str>,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Self> {
        let aligned = aligned_footer_bytes(data)?;
        let footer = access_footer(&aligned)?;
        // One deserializer for every nested field; it is only bookkeeping
        // for shared pointers, which these types do not use.
        let mut pool = Pool::new();
        let de = |e: rkyv::rancor::Error| Error::Serialization(e.to_string());

        let strings: Vec<EcoString> = footer
            .strings
            .iter()
            .map(|s| EcoString::from(s.as_str()))
            .collect();
        let values: Vec<AttributeValue> =
            deserialize_using::<Vec<DiskValue>, _, rkyv::rancor::Error>(&footer.values, &mut pool)
                .map_err(de)?
                .iter()
                .map(|v| v.decode(&strings))
                .collect::<Result<_>>()?;
        let blocks: Vec<BlockMeta> =
            deserialize_using::<_, _, rkyv::rancor::Error>(&footer.blocks, &mut pool)
                .map_err(de)?;
        for (index, block) in blocks.iter().enumerate() {
            block.validate(index, data_end)?;
        }

        let n = footer.arrays.len();
        let mut arrays = Vec::with_capacity(n);
        let mut by_name = HashMap::with_capacity(n);
        // A column is created the first time a key is seen. `col_of` maps a
        // string-pool index to its column, so the hot loop never hashes.
        let mut col_of: Vec<Option<usize>> = vec![None; strings.len()];
        let mut keys: Vec<EcoString> = Vec::new();
        let mut columns: Vec<Vec<Option<AttributeValue>>> = Vec::new();

        for (i, meta) in footer.arrays.iter().enumerate() {
            for pair in meta.attributes.iter() {
                let (k, v) = (pair.0.to_native() as usize, pair.1.to_native() as usize);
                let slot = col_of.get_mut(k).ok_or_else(|| {
                    Error::InvalidFooter(format!(
                        "attribute key index {k} out of range, pool has {} strings",
                        strings.len()
                    ))
                })?;
                let c = match *slot {
                    Some(c) => c,
                    None => {
                        let c = columns.len();
                        *slot = Some(c);
                        keys.push(strings[k].clone());
                        columns.push(vec![None; n]);
                        c
                    }
                };
                let value = values.get(v).cloned().ok_or_else(|| {
                    Error::InvalidFooter(format!(
                        "attribute value index {v} out of range, pool has {} values",
                        values.len()
                    ))
                })?;
                columns[c][i] = Some(value);
            }

            let name = EcoString::from(meta.name.as_str());
            if by_name.insert(name.clone(), i).is_some() {
                return Err(Error::InvalidFooter(format!(
                    "array '{name}' is defined twice"
                )));
            }
            let info = ArrayInfo {
                name,
                dtype: deserialize_using::<_, _, rkyv::rancor::Error>(&meta.dtype, &mut pool)
                    .map_err(de)?,
                shape: meta.shape.iter().map(|x| x.to_native()).collect(),
                dimension_names: meta
                    .dimension_names
                    .iter()
                    .map(|s| s.as_str().to_owned())
                    .collect(),
                chunk_shape: meta.chunk_shape.iter().map(|x| x.to_native()).collect(),
                fill_value: deserialize_using::<_, _, rkyv::rancor::Error>(
                    &meta.fill_value,
                    &mut pool,
                )
                .map_err(de)?,
                stats: deserialize_using::<_, _, rkyv::rancor::Error>(&meta.stats, &mut pool)
                    .map_err(de)?,
                chunks: deserialize_using::<_, _, rkyv::rancor::Error>(&meta.chunks, &mut pool)
                    .map_err(de)?,
            };
            info.validate(&blocks)?;
            arrays.push(info);
        }

        let key_ids = keys
            .iter()
            .enumerate()
            .map(|(c, k)| (k.clone(), c))
            .collect();
        Ok(Self {
            storage,
            path,
            cache,
            blocks,
            arrays,
            by_name,
            keys,
            key_ids,
            columns,
        })
    }
}

impl ArrayFile {
    /// Patched in, for [`ReadConfig::exact_blocks`] (0.15.0 decoded a block to whatever size
    /// its table entry claimed, so a block of one 128-byte chunk could decode to gigabytes): a
    /// block must decode to exactly where the last chunk it holds ends. A writer appends chunks
    /// to a block back to back and records the block's size when it flushes, so a block it
    /// wrote ends with a chunk, unless a later write replaced that chunk (the replacement goes
    /// elsewhere and the old bytes stay); a file whose chunks were each written once (every
    /// Atlas segment) has no other kind of block. Refused, naming the block and the array
    /// whose chunk ends last in it.
    fn check_exact_blocks(&self) -> Result<()> {
        // `(end, array)`: where the last chunk in each block ends, and whose it is.
        let mut extents: Vec<(u64, Option<usize>)> = vec![(0, None); self.blocks.len()];
        for (i, info) in self.arrays.iter().enumerate() {
            for entry in &info.chunks {
                let address = &entry.address;
                let end = u64::from(address.offset) + u64::from(address.size);
                if let Some(extent) = extents.get_mut(address.block_id.0 as usize) {
                    if extent.1.is_none() || end > extent.0 {
                        *extent = (end.max(extent.0), Some(i));
                    }
                }
            }
        }
        for (index, (block, &(end, array))) in self.blocks.iter().zip(&extents).enumerate() {
            if block.uncompressed_size > end {
                let holder = match array.and_then(|i| self.arrays.get(i)) {
                    Some(info) => {
                        format!("its last chunk, of array '{}', ends at {end}", info.name)
                    }
                    None => "no chunk lies in it".to_owned(),
                };
                return Err(Error::InvalidFooter(format!(
                    "block {index} claims to decode to {} bytes, but {holder}",
                    block.uncompressed_size
                )));
            }
        }
        Ok(())
    }
}

// ── Schema, attributes, stats ────────────────────────────────────────

impl ArrayFile {
    /// Every array, in file order.
    pub fn arrays(&self) -> &[ArrayInfo] {
        &self.arrays
    }

    /// The array called `name`, if present.
    pub fn array(&self, name: &str) -> Option<&ArrayInfo> {
        self.by_name.get(name).map(|&i| &self.arrays[i])
    }

    /// Every distinct attribute key in the file, in order of first use.
    pub fn keys(&self) -> &[EcoString] {
        &self.keys
    }

    /// All attributes of array `name` as `(key, value)` pairs, in the order
    /// of [`keys`](Self::keys). `None` if the array does not exist.
    pub fn attributes(
        &self,
        name: &str,
    ) -> Option<impl Iterator<Item = (&EcoString, &AttributeValue)>> {
        let i = *self.by_name.get(name)?;
        Some(
            self.keys
                .iter()
                .zip(&self.columns)
                .filter_map(move |(key, column)| column[i].as_ref().map(|v| (key, v))),
        )
    }

    /// Attribute `key` of array `name`. `None` if either does not exist.
    pub fn get_attribute(&self, name: &str, key: &str) -> Option<&AttributeValue> {
        let i = *self.by_name.get(name)?;
        let c = *self.key_ids.get(key)?;
        self.columns[c][i].as_ref()
    }

    /// The column of attribute `key`: one cell per array, in file order and
    /// aligned with [`arrays`](Self::arrays). `None` if no array carries
    /// the key at all.
    ///
    /// This is a borrow of what the file holds in memory; it costs nothing.
    pub fn attribute_column(&self, key: &str) -> Option<&[Option<AttributeValue>]> {
        self.key_ids.get(key).map(|&c| self.columns[c].as_slice())
    }

    /// Attribute `key` for every array, in file order: `Some(value)` where
    /// the array carries it, `None` where it does not.
    ///
    /// Use this to select arrays by attribute without a call per array.
    /// Names and values borrow from the open file; the call allocates one
    /// vector. [`attribute_column`](Self::attribute_column) avoids even that.
    pub fn attribute_index(&self, key: &str) -> Vec<(&str, Option<&AttributeValue>)> {
        let column = self.attribute_column(key);
        self.arrays
            .iter()
            .enumerate()
            .map(|(i, info)| {
                let value = column.and_then(|c| c[i].as_ref());
                (info.name.as_str(), value)
            })
            .collect()
    }

    /// Statistics of array `name`, if the array exists and has them.
    pub fn array_stats(&self, name: &str) -> Option<&ArrayStats> {
        self.array(name)?.stats.as_ref()
    }

    /// Statistics of every array that has them, in file order.
    pub fn stats(&self) -> impl Iterator<Item = &ArrayStats> {
        self.arrays.iter().filter_map(|a| a.stats.as_ref())
    }

    fn info(&self, name: &str) -> Result<&ArrayInfo> {
        self.array(name).ok_or_else(|| Error::ArrayNotFound {
            name: name.to_string(),
        })
    }
}

// ── Reading ──────────────────────────────────────────────────────────

impl ArrayFile {
    /// Reads the sub-region of array `name` starting at `start` with the given
    /// `shape`.
    ///
    /// Pass `vec![], vec![]` to read the whole array. Chunks that were never
    /// written come back as the fill value. `T` must match the array's
    /// declared dtype, otherwise [`Error::DTypeMismatch`] is returned.
    pub async fn read_array<T: ArrayElement>(
        &self,
        name: &str,
        start: Vec<usize>,
        shape: Vec<usize>,
    ) -> Result<ndarray::ArcArray<T, ndarray::IxDyn>> {
        let info = self.info(name)?;
        let slice: Option<Vec<Range<usize>>> = if start.is_empty() && shape.is_empty() {
            None
        } else {
            let ndim = info.shape.len();
            let start = if start.len() == ndim {
                start
            } else {
                vec![0; ndim]
            };
            let shape: Vec<usize> = if shape.len() == ndim {
                shape
            } else {
                info.shape.iter().map(|&s| s as usize).collect()
            };
            Some(start.iter().zip(&shape).map(|(&s, &n)| s..s + n).collect())
        };
        nd::assemble_nd(self, info, slice.as_deref()).await
    }

    /// Loads into the block cache every block that holds a chunk of the named
    /// arrays and is not cached yet, in few requests: blocks that lie back to
    /// back in the file are fetched by one ranged read (at most
    /// [`PREFETCH_SPAN_MAX`] bytes each), then decompressed one by one.
    ///
    /// Added beside 0.15.0's reader, which fetches block by block as chunks
    /// are assembled: reading many small arrays that share blocks (one
    /// variable of a run of datasets) then costs one request per range, not
    /// one per block. Reads after it hit the cache; a file opened without a
    /// cache has nowhere to keep the blocks, so this does nothing there.
    /// Unknown names are [`Error::ArrayNotFound`].
    pub async fn prefetch_arrays<S: AsRef<str>>(&self, names: &[S]) -> Result<()> {
        let Some(cache) = &self.cache else {
            return Ok(());
        };
        let mut ids: Vec<u32> = Vec::new();
        for name in names {
            let info = self.info(name.as_ref())?;
            ids.extend(info.chunks.iter().map(|c| c.address.block_id.0));
        }
        ids.sort_unstable();
        ids.dedup();
        let mut spans: Vec<Vec<&BlockMeta>> = Vec::new();
        for id in ids {
            if cache.contains_block(&self.path, id) {
                continue;
            }
            let block = self
                .blocks
                .get(id as usize)
                .ok_or(Error::BlockOutOfRange { block_id: id })?;
            let joins = spans.last().is_some_and(|span| {
                let (first, last) = (span[0], span[span.len() - 1]);
                last.file_range().end == block.file_offset
                    && block.file_range().end - first.file_offset <= PREFETCH_SPAN_MAX
            });
            match spans.last_mut() {
                Some(span) if joins => span.push(block),
                _ => spans.push(vec![block]),
            }
        }
        futures::future::try_join_all(spans.iter().map(|span| self.fetch_span(cache, span)))
            .await?;
        Ok(())
    }

    /// One ranged read of back-to-back `span`, each block decompressed into `cache`.
    async fn fetch_span(&self, cache: &BlockCache, span: &[&BlockMeta]) -> Result<()> {
        let (Some(first), Some(last)) = (span.first(), span.last()) else {
            return Ok(());
        };
        let start = first.file_offset;
        let bytes = self
            .storage
            .read_range(start..last.file_range().end)
            .await?;
        for block in span {
            let range = block.file_range();
            let from = usize::try_from(range.start - start).unwrap_or(usize::MAX);
            let to = usize::try_from(range.end - start).unwrap_or(usize::MAX);
            let raw = bytes
                .get(from..to)
                .map(|s| bytes.slice_ref(s))
                .ok_or_else(|| {
                    Error::Storage(format!(
                        "a read of bytes {start}..{} returned {} bytes",
                        last.file_range().end,
                        bytes.len()
                    ))
                })?;
            let decompressed = if block.codec == CodecId::None {
                raw
            } else {
                let codec = block.codec.clone();
                let size = block.uncompressed_size as usize;
                let vec = tokio::task::spawn_blocking(move || decompress_by_id(&codec, &raw, size))
                    .await
                    .map_err(|e| Error::Storage(format!("decompression task failed: {e}")))??;
                Bytes::from(vec)
            };
            cache
                .insert_block(&self.path, block.id.0, decompressed)
                .await;
        }
        Ok(())
    }

    /// Decodes the chunk at `coord`. An unwritten chunk is materialized from
    /// the fill value.
    pub(crate) async fn read_chunk<T: ArrayElement>(
        &self,
        info: &ArrayInfo,
        coord: &[u32],
    ) -> Result<Vec<T>> {
        if let Some(bytes) = self.read_raw_chunk(info, coord).await? {
            return Ok(T::decode_chunk(&bytes));
        }
        Ok(vec![
            T::fill_element(info.fill_value.as_ref());
            info.chunk_len(coord)
        ])
    }

    /// Raw bytes of the chunk at `coord`, or `None` if it was never written.
    pub(crate) async fn read_raw_chunk(
        &self,
        info: &ArrayInfo,
        coord: &[u32],
    ) -> Result<Option<Bytes>> {
        let Some(addr) = find_chunk(&info.chunks, coord) else {
            return Ok(None);
        };
        let block = self
            .blocks
            .get(addr.block_id.0 as usize)
            .ok_or(Error::BlockOutOfRange {
                block_id: addr.block_id.0,
            })?;

        let block_bytes = match &self.cache {
            Some(cache) => cache.get_or_load(&self.path, block, &*self.storage).await?,
            None => {
                let compressed = self.storage.read_range(block.file_range()).await?;
                Bytes::from(decompress_by_id(
                    &block.codec,
                    &compressed,
                    block.uncompressed_size as usize,
                )?)
            }
        };

        let start = addr.offset as usize;
        let end = start + addr.size as usize;
        if end > block_bytes.len() {
            return Err(Error::InvalidFooter(format!(
                "chunk {coord:?} of '{}' ends at {end}, past block {} of {} bytes",
                info.name,
                addr.block_id.0,
                block_bytes.len()
            )));
        }
        Ok(Some(block_bytes.slice(start..end)))
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array;

    use super::*;
    use crate::address::{BlockId, ChunkAddress};
    use crate::footer::{ArrayMeta, FOOTER_VERSION, Footer};
    use crate::stats::StatValue;
    use crate::storage::InMemoryStorage;
    use crate::writer::{ArrayWriter, WriterConfig};
    use crate::{Lz4Codec, NoCompression};

    fn writer() -> ArrayWriter {
        ArrayWriter::new(WriterConfig {
            block_target_size: 64,
            ..WriterConfig::new(NoCompression)
        })
    }

    /// Finishes into memory; returns the reader from `finish` and the
    /// storage, so a test can also reopen the same bytes.
    async fn finish(w: ArrayWriter) -> (ArrayFile, Arc<InMemoryStorage>) {
        let storage = Arc::new(InMemoryStorage::new());
        let file = w
            .finish_to(storage.clone(), Arc::from("mem"), None)
            .await
            .unwrap();
        (file, storage)
    }

    #[tokio::test]
    async fn exact_blocks_refuses_a_block_that_runs_past_its_last_chunk() {
        // Chunks of two i32 in blocks of 16 bytes: chunks 0 and 1 fill block 0; rewriting
        // chunk 1 puts its new bytes in block 1 and leaves block 0 ending in bytes no chunk
        // addresses. Read as 0.15.0 reads it by default; refused with `exact_blocks`.
        let store: Arc<dyn object_store::ObjectStore> =
            Arc::new(object_store::memory::InMemory::new());
        let path = object_store::path::Path::from("rewritten");
        let mut w = ArrayWriter::new(WriterConfig {
            block_target_size: 16,
            ..WriterConfig::new(NoCompression)
        });
        w.define_array::<i32>("a", vec![], vec![4], Some(vec![2]), None)
            .unwrap();
        let all = Array::from_vec(vec![1i32, 2, 3, 4]).into_dyn();
        w.write_array("a", vec![0], all.view()).unwrap();
        let one = Array::from_vec(vec![9i32]).into_dyn();
        w.write_array("a", vec![3], one.view()).unwrap();
        w.finish(Arc::clone(&store), path.clone()).await.unwrap();
        let lenient = ArrayFile::open(Arc::clone(&store), path.clone(), ReadConfig::default())
            .await
            .unwrap();
        let values = lenient
            .read_array::<i32>("a", vec![], vec![])
            .await
            .unwrap();
        assert_eq!(values.iter().copied().collect::<Vec<_>>(), [1, 2, 3, 9]);
        let exact = ReadConfig {
            exact_blocks: true,
            ..ReadConfig::default()
        };
        let error = ArrayFile::open(store, path, exact).await.unwrap_err();
        assert!(
            matches!(&error, Error::InvalidFooter(m) if m
                == "block 0 claims to decode to 16 bytes, but its last chunk, of array 'a', ends at 8"),
            "{error:?}"
        );
    }

    async fn reopen(storage: Arc<InMemoryStorage>, cache: Option<Arc<BlockCache>>) -> ArrayFile {
        ArrayFile::open_storage(storage, Arc::from("mem"), cache)
            .await
            .unwrap()
    }

    fn sample() -> ArrayWriter {
        let mut w = writer();
        w.define_array::<f32>("temp", vec!["t".into()], vec![6], Some(vec![4]), None)
            .unwrap();
        w.write_array(
            "temp",
            vec![0],
            Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])
                .into_dyn()
                .view(),
        )
        .unwrap();
        w.set_attribute("temp", "units", AttributeValue::String("K".into()))
            .unwrap();
        w.set_attribute("temp", "scale", AttributeValue::Float64(0.5))
            .unwrap();

        w.define_array::<i32>(
            "count",
            vec!["t".into()],
            vec![3],
            None,
            Some(FillValue::Int(-1)),
        )
        .unwrap();
        w.set_attribute("count", "units", AttributeValue::String("n".into()))
            .unwrap();
        w
    }

    #[tokio::test]
    async fn finish_returns_a_reader_that_matches_a_fresh_open() {
        let (from_finish, storage) = finish(sample()).await;
        let from_open = reopen(storage, None).await;

        for file in [&from_finish, &from_open] {
            let names: Vec<&str> = file.arrays().iter().map(|a| a.name.as_str()).collect();
            assert_eq!(names, vec!["temp", "count"], "file order");
            let temp = file
                .read_array::<f32>("temp", vec![], vec![])
                .await
                .unwrap();
            assert_eq!(
                temp.iter().copied().collect::<Vec<_>>(),
                vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
            );
            assert_eq!(
                file.get_attribute("temp", "units"),
                Some(&AttributeValue::String("K".into()))
            );
        }
    }

    #[tokio::test]
    async fn array_lookup_borrows_metadata() {
        let (file, _) = finish(sample()).await;
        let temp = file.array("temp").unwrap();
        assert_eq!(temp.dtype, DType::Float32);
        assert_eq!(temp.shape, vec![6]);
        assert_eq!(temp.chunk_shape, vec![4]);
        assert_eq!(temp.dimension_names, vec!["t"]);
        assert_eq!(
            temp.written_chunks().collect::<Vec<_>>(),
            vec![&[0u32][..], &[1]]
        );
        let count = file.array("count").unwrap();
        assert_eq!(count.fill_value, Some(FillValue::Int(-1)));
        assert!(count.written_chunks().next().is_none());
        assert!(file.array("missing").is_none());
    }

    #[tokio::test]
    async fn unwritten_chunks_read_as_fill_and_sub_regions_span_chunks() {
        let (file, _) = finish(sample()).await;
        let count = file
            .read_array::<i32>("count", vec![], vec![])
            .await
            .unwrap();
        assert_eq!(count.iter().copied().collect::<Vec<_>>(), vec![-1, -1, -1]);

        // [3, 5) crosses the chunk boundary at 4.
        let part = file
            .read_array::<f32>("temp", vec![3], vec![2])
            .await
            .unwrap();
        assert_eq!(part.shape(), &[2]);
        assert_eq!(part.iter().copied().collect::<Vec<_>>(), vec![4.0, 5.0]);
    }

    #[tokio::test]
    async fn partially_written_chunked_array_mixes_data_and_fill() {
        let mut w = writer();
        w.define_array::<u8>(
            "x",
            vec![],
            vec![8],
            Some(vec![4]),
            Some(FillValue::UInt(9)),
        )
        .unwrap();
        w.write_array(
            "x",
            vec![4],
            Array::from_vec(vec![1u8, 2, 3, 4]).into_dyn().view(),
        )
        .unwrap();
        let (file, _) = finish(w).await;
        let x = file.read_array::<u8>("x", vec![], vec![]).await.unwrap();
        assert_eq!(
            x.iter().copied().collect::<Vec<_>>(),
            vec![9, 9, 9, 9, 1, 2, 3, 4]
        );
    }

    #[tokio::test]
    async fn attributes_decode_into_per_array_maps() {
        let (file, _) = finish(sample()).await;
        let mut temp: Vec<(&str, &AttributeValue)> = file
            .attributes("temp")
            .unwrap()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        temp.sort_by_key(|(k, _)| *k);
        assert_eq!(
            temp,
            vec![
                ("scale", &AttributeValue::Float64(0.5)),
                ("units", &AttributeValue::String("K".into())),
            ]
        );
        assert_eq!(
            file.get_attribute("temp", "scale"),
            Some(&AttributeValue::Float64(0.5))
        );
        let mut keys: Vec<&str> = file.keys().iter().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(keys, vec!["scale", "units"]);
        let column = file.attribute_column("units").unwrap();
        assert_eq!(column.len(), 2);
        assert_eq!(column[1], Some(AttributeValue::String("n".into())));
        assert!(file.attribute_column("nope").is_none());
        assert_eq!(file.get_attribute("count", "scale"), None);
        assert_eq!(file.get_attribute("missing", "units"), None);
        assert!(file.attributes("missing").is_none());

        let column = file.attribute_index("units");
        assert_eq!(
            column,
            vec![
                ("temp", Some(&AttributeValue::String("K".into()))),
                ("count", Some(&AttributeValue::String("n".into()))),
            ]
        );
        let scale = file.attribute_index("scale");
        assert_eq!(scale[0].1, Some(&AttributeValue::Float64(0.5)));
        assert_eq!(scale[1], ("count", None));
        assert!(
            file.attribute_index("nope")
                .iter()
                .all(|(_, v)| v.is_none())
        );
    }

    /// Arrays with different attribute sets share one column per key; a
    /// missing attribute is a `None` cell.
    #[tokio::test]
    async fn attribute_index_handles_mixed_schemas() {
        let mut w = writer();
        let schemas: [(&str, &[&str]); 4] = [
            ("a", &["a", "m", "z"]),
            ("b", &["m"]),
            ("c", &["a", "z"]),
            ("d", &["a", "b", "c", "m"]),
        ];
        for (i, (name, keys)) in schemas.iter().enumerate() {
            w.define_array::<u8>(*name, vec![], vec![1], None, None)
                .unwrap();
            for key in keys.iter() {
                w.set_attribute(name, key, AttributeValue::Int64(i as i64))
                    .unwrap();
            }
        }
        let (file, _) = finish(w).await;
        assert_eq!(
            file.attribute_index("m"),
            vec![
                ("a", Some(&AttributeValue::Int64(0))),
                ("b", Some(&AttributeValue::Int64(1))),
                ("c", None),
                ("d", Some(&AttributeValue::Int64(3))),
            ]
        );
        assert_eq!(file.attributes("d").unwrap().count(), 4);
        assert_eq!(file.get_attribute("c", "m"), None);
        let m = file.attribute_column("m").unwrap();
        assert_eq!(m.iter().filter(|v| v.is_some()).count(), 3);
    }

    #[tokio::test]
    async fn a_long_string_value_is_shared_between_arrays() {
        let long = "a value longer than fifteen bytes";
        let mut w = writer();
        for name in ["a", "b"] {
            w.define_array::<u8>(name, vec![], vec![1], None, None)
                .unwrap();
            w.set_attribute(name, "k", AttributeValue::String(long.into()))
                .unwrap();
        }
        let (_, storage) = finish(w).await;
        // The open path is what builds the maps from the pool.
        let file = reopen(storage, None).await;
        let get = |name: &str| match file.get_attribute(name, "k") {
            Some(AttributeValue::String(s)) => s,
            other => panic!("unexpected {other:?}"),
        };
        let (a, b) = (get("a"), get("b"));
        assert_eq!(a, long);
        assert_eq!(
            a.as_ptr(),
            b.as_ptr(),
            "one heap allocation, two references"
        );
    }

    #[tokio::test]
    async fn stats_per_array_and_iterated() {
        let (file, _) = finish(sample()).await;
        let temp = file.array_stats("temp").unwrap();
        assert_eq!(temp.min, Some(StatValue::Float(1.0)));
        assert_eq!(temp.max, Some(StatValue::Float(6.0)));
        assert_eq!(temp.row_count, 6);
        assert_eq!(temp.null_count, 0);
        let count = file.array_stats("count").unwrap();
        assert_eq!(count.null_count, 3, "never written");
        assert!(file.array_stats("missing").is_none());
        let names: Vec<&str> = file.stats().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["temp", "count"]);
    }

    #[tokio::test]
    async fn read_errors() {
        let (file, _) = finish(sample()).await;
        assert!(matches!(
            file.read_array::<i32>("temp", vec![], vec![]).await,
            Err(Error::DTypeMismatch { .. })
        ));
        assert!(matches!(
            file.read_array::<f32>("missing", vec![], vec![]).await,
            Err(Error::ArrayNotFound { .. })
        ));
    }

    #[tokio::test]
    async fn cached_and_uncached_reads_agree_on_compressed_blocks() {
        let mut w = ArrayWriter::new(WriterConfig {
            block_target_size: 64,
            ..WriterConfig::new(Lz4Codec)
        });
        w.define_array::<u16>("x", vec![], vec![200], Some(vec![50]), None)
            .unwrap();
        let values: Vec<u16> = (0..200).collect();
        w.write_array(
            "x",
            vec![0],
            Array::from_vec(values.clone()).into_dyn().view(),
        )
        .unwrap();
        let (_, storage) = finish(w).await;

        let cached = reopen(storage.clone(), Some(Arc::new(BlockCache::new(1 << 20, 0)))).await;
        let plain = reopen(storage, None).await;
        for file in [&cached, &plain] {
            let x = file.read_array::<u16>("x", vec![], vec![]).await.unwrap();
            assert_eq!(x.iter().copied().collect::<Vec<_>>(), values);
            // Second read hits the cache on the cached file.
            let again = file
                .read_array::<u16>("x", vec![100], vec![10])
                .await
                .unwrap();
            assert_eq!(again.iter().copied().collect::<Vec<_>>(), &values[100..110]);
        }
    }

    #[tokio::test]
    async fn zero_length_axis_reads_back_empty() {
        let mut w = writer();
        w.define_array::<f32>("h", vec!["n".into(), "x".into()], vec![0, 3], None, None)
            .unwrap();
        let (file, _) = finish(w).await;
        let h = file.read_array::<f32>("h", vec![], vec![]).await.unwrap();
        assert_eq!(h.shape(), &[0, 3]);
        assert_eq!(file.array("h").unwrap().shape, vec![0, 3]);
    }

    #[tokio::test]
    async fn duplicate_array_names_are_rejected_on_open() {
        let meta = ArrayMeta {
            name: "twice".into(),
            dtype: DType::UInt8,
            shape: vec![1],
            dimension_names: vec!["x".into()],
            chunk_shape: vec![1],
            chunks: vec![],
            fill_value: None,
            attributes: vec![],
            stats: None,
        };
        let footer = Footer {
            version: FOOTER_VERSION,
            blocks: vec![],
            strings: vec![],
            values: vec![],
            arrays: vec![meta.clone(), meta],
        };
        let storage = Arc::new(InMemoryStorage::from_bytes(footer.serialize().unwrap()));
        let err = ArrayFile::open_storage(storage, Arc::from("mem"), None)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidFooter(ref m) if m.contains("twice")));
    }

    #[tokio::test]
    async fn a_chunk_pointing_past_its_block_is_an_error_not_a_panic() {
        let mut footer = Footer::new();
        footer.blocks.push(BlockMeta {
            id: BlockId(0),
            file_offset: 0,
            compressed_size: 4,
            uncompressed_size: 4,
            codec: crate::block::CodecId::None,
        });
        footer.arrays.push(ArrayMeta {
            name: "x".into(),
            dtype: DType::UInt8,
            shape: vec![8],
            dimension_names: vec!["x".into()],
            chunk_shape: vec![8],
            chunks: vec![ChunkEntry {
                coord: vec![0],
                address: ChunkAddress {
                    block_id: BlockId(0),
                    offset: 0,
                    size: 8,
                },
            }],
            fill_value: None,
            attributes: vec![],
            stats: None,
        });
        let mut bytes = vec![1u8, 2, 3, 4];
        bytes.extend(footer.serialize().unwrap());
        let storage = Arc::new(InMemoryStorage::from_bytes(bytes));
        // Patched: the chunk table is checked at open, so the error comes there.
        assert!(matches!(
            ArrayFile::open_storage(storage, Arc::from("mem"), None).await,
            Err(Error::InvalidFooter(_))
        ));
    }
}
