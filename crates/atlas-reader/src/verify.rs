//! A collection check that reads what an open leaves unread: the leading header, every segment
//! and, in full, every written chunk of every array.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::stats::{unnamed_entry, OrdinalCursor};
use array_format::{ArrayElement, ArrayFile, ArrayInfo, DType as SegmentDType, TimestampNs};
use atlas_footer::trailer::check_header;
use atlas_footer::HEADER_SIZE;
use object_store::ObjectStoreExt;

/// Largest chunk, in elements, a full verify decodes; a larger one is reported instead of
/// allocated (a segment's chunk shape is untrusted).
pub const MAX_VERIFY_CHUNK_ELEMENTS: u64 = 1 << 26;

/// How much [`Atlas::verify`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum VerifyDepth {
    /// The leading header, every segment's own footer, and every live dataset's arrays
    /// cross-checked against the collection footer: no data block is read.
    #[default]
    Structure,
    /// Also decodes every written chunk of every array in every segment (deleted datasets
    /// included): every data block is read and decompressed.
    Full,
}

/// One thing [`Atlas::verify`] found wrong.
#[derive(Debug)]
pub struct VerifyProblem {
    /// Where: `header`, `segment 'NAME'`, `DATASET/ARRAY` or `DATASET/ARRAY chunk [..]`.
    pub location: String,
    /// What is wrong.
    pub error: AtlasError,
}

/// What [`Atlas::verify`] checked and every problem it found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Segments opened (or attempted).
    pub segments_checked: usize,
    /// Live datasets' arrays cross-checked against the footer.
    pub arrays_checked: usize,
    /// Written chunks decoded (full depth only).
    pub chunks_decoded: u64,
    /// Arrays whose element type this reader cannot decode (full depth only), as
    /// `segment/entry`; their chunks are not read.
    pub skipped: Vec<String>,
    /// Everything found wrong, in the order found.
    pub problems: Vec<VerifyProblem>,
}

impl VerifyReport {
    /// Whether nothing was found wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, location: impl Into<String>, error: AtlasError) {
        self.problems.push(VerifyProblem {
            location: location.into(),
            error,
        });
    }
}

impl Atlas {
    /// Checks the collection and reports every problem found rather than stopping at the
    /// first: the leading magic and version (which an open may skip to save a request), every
    /// segment, every live dataset's arrays against the footer, and with [`VerifyDepth::Full`]
    /// every written chunk of every array.
    ///
    /// Every failure, store errors included, is a problem in the report; nothing is left out
    /// because an earlier check failed (a segment that does not open is reported once, and its
    /// arrays are not decoded).
    ///
    /// A growing collection verifies every part, each problem's location led by
    /// `part <id>: `.
    pub async fn verify(&self, depth: VerifyDepth) -> VerifyReport {
        let Some(growing) = &self.growing else {
            return self.verify_own(depth).await;
        };
        let mut report = VerifyReport::default();
        for (part, commit) in self.parts.iter().zip(&growing.part_commits) {
            let own = part.verify_own(depth).await;
            report.segments_checked += own.segments_checked;
            report.arrays_checked += own.arrays_checked;
            report.chunks_decoded += own.chunks_decoded;
            report.skipped.extend(own.skipped);
            for problem in own.problems {
                report.problem(
                    format!("part {}: {}", commit.part, problem.location),
                    problem.error,
                );
            }
        }
        report
    }

    async fn verify_own(&self, depth: VerifyDepth) -> VerifyReport {
        let mut report = VerifyReport::default();
        self.verify_header(&mut report).await;
        let mut opened: Vec<(String, &ArrayFile)> = Vec::new();
        let mut unopened = std::collections::HashSet::new();
        for (variable, (name, _)) in (0u32..).zip(self.own_variables()) {
            report.segments_checked += 1;
            match self.segment(variable).await {
                Ok(file) => opened.push((name.to_owned(), file)),
                Err(error) => {
                    unopened.insert(variable);
                    report.problem(format!("segment '{name}'"), error);
                }
            }
        }
        for (name, file) in &opened {
            let mut ordinals = OrdinalCursor::new(self);
            for info in file.arrays() {
                if ordinals.ordinal(&info.name).is_none() {
                    report.problem(
                        format!("segment '{name}'"),
                        unnamed_entry(self.container.as_ref(), name, &info.name),
                    );
                }
            }
        }
        for dataset in self.datasets() {
            for array in dataset.schema().arrays() {
                // A segment that does not open is reported once, not once per dataset (and
                // is not asked for again).
                if unopened.contains(&array.variable()) {
                    continue;
                }
                report.arrays_checked += 1;
                if let Err(error) = dataset.segment_entry(&array).await {
                    report.problem(format!("{}/{}", dataset.name(), array.name()), error);
                }
            }
        }
        if depth == VerifyDepth::Full {
            for (name, file) in &opened {
                for info in file.arrays() {
                    self.decode_every_chunk(name, file, info, &mut report).await;
                }
            }
        }
        report
    }

    async fn verify_header(&self, report: &mut VerifyReport) {
        let container = self.container.as_ref();
        match self.store.get_range(&self.container, 0..HEADER_SIZE).await {
            Ok(head) => {
                if let Err(e) = check_header(&head) {
                    report.problem("header", AtlasError::from_footer(container, e));
                }
            }
            Err(e) => report.problem("header", e.into()),
        }
    }

    async fn decode_every_chunk(
        &self,
        segment: &str,
        file: &ArrayFile,
        info: &ArrayInfo,
        report: &mut VerifyReport,
    ) {
        macro_rules! each_chunk {
            ($t:ty) => {
                self.decode_chunks::<$t>(segment, file, info, report).await
            };
        }
        match &info.dtype {
            SegmentDType::Int8 => each_chunk!(i8),
            SegmentDType::Int16 => each_chunk!(i16),
            SegmentDType::Int32 => each_chunk!(i32),
            SegmentDType::Int64 => each_chunk!(i64),
            SegmentDType::UInt8 => each_chunk!(u8),
            SegmentDType::UInt16 => each_chunk!(u16),
            SegmentDType::UInt32 => each_chunk!(u32),
            SegmentDType::UInt64 => each_chunk!(u64),
            SegmentDType::Float32 => each_chunk!(f32),
            SegmentDType::Float64 => each_chunk!(f64),
            SegmentDType::String => each_chunk!(String),
            SegmentDType::Binary => each_chunk!(Vec<u8>),
            SegmentDType::TimestampNs => each_chunk!(TimestampNs),
            _ => {
                if info.written_chunks().next().is_some() {
                    report.skipped.push(format!("{segment}/{}", info.name));
                }
            }
        }
    }

    async fn decode_chunks<T: ArrayElement>(
        &self,
        segment: &str,
        file: &ArrayFile,
        info: &ArrayInfo,
        report: &mut VerifyReport,
    ) {
        for coord in info.written_chunks() {
            let location = format!("{}/{segment} chunk {coord:?}", info.name);
            let (start, shape) = match chunk_region(info, coord) {
                Ok(region) => region,
                Err(reason) => {
                    let error = AtlasError::corrupt(
                        self.container.as_ref(),
                        format!("segment '{segment}'"),
                        reason,
                    );
                    report.problem(location, error);
                    continue;
                }
            };
            match file.read_array::<T>(&info.name, start, shape).await {
                Ok(_) => report.chunks_decoded += 1,
                Err(e) => report.problem(location, self.segment_error(segment, e)),
            }
        }
    }
}

/// The element region of chunk `coord`: its start and its shape clipped to the array.
fn chunk_region(info: &ArrayInfo, coord: &[u32]) -> Result<(Vec<usize>, Vec<usize>), String> {
    let mut start = Vec::with_capacity(coord.len());
    let mut shape = Vec::with_capacity(coord.len());
    let mut elements = 1u64;
    for ((&c, &chunk), &len) in coord.iter().zip(&info.chunk_shape).zip(&info.shape) {
        let from = u64::from(c) * u64::from(chunk);
        let to = (from + u64::from(chunk)).min(u64::from(len));
        let n = to.saturating_sub(from);
        elements = elements.saturating_mul(n);
        start.push(usize::try_from(from).map_err(|e| e.to_string())?);
        shape.push(usize::try_from(n).map_err(|e| e.to_string())?);
    }
    if elements > MAX_VERIFY_CHUNK_ELEMENTS {
        return Err(format!(
            "chunk {coord:?} of '{}' declares {elements} elements, more than the \
             {MAX_VERIFY_CHUNK_ELEMENTS} a verify decodes",
            info.name
        ));
    }
    Ok((start, shape))
}
