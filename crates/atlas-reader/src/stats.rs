//! Statistics: what array-format stored per array, folded over the live datasets.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::view::DatasetView;
use array_format::{ArrayInfo, ArrayStats, StatValue};
use smol_str::SmolStr;

/// One dataset's statistics for one array.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetStats {
    /// The dataset.
    pub dataset: SmolStr,
    /// Its ordinal.
    pub ordinal: u32,
    /// Smallest non-fill value; `None` for a dtype with no order or when every element is fill.
    pub min: Option<StatValue>,
    /// Largest non-fill value.
    pub max: Option<StatValue>,
    /// Elements equal to the fill value (unwritten ones included).
    pub null_count: u64,
    /// Elements in the array.
    pub row_count: u64,
}

/// One array's statistics folded over every live dataset that declares it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CollectionStats {
    /// Datasets folded in.
    pub datasets: u64,
    /// Smallest value over them.
    pub min: Option<StatValue>,
    /// Largest value over them.
    pub max: Option<StatValue>,
    /// Sum of null counts.
    pub null_count: u64,
    /// Sum of row counts.
    pub row_count: u64,
}

impl CollectionStats {
    /// Folds in what another set of datasets folded to (another part of a growing collection).
    fn merge(&mut self, other: CollectionStats) {
        self.datasets += other.datasets;
        self.null_count = self.null_count.saturating_add(other.null_count);
        self.row_count = self.row_count.saturating_add(other.row_count);
        fold(&mut self.min, other.min.as_ref(), std::cmp::Ordering::Less);
        fold(
            &mut self.max,
            other.max.as_ref(),
            std::cmp::Ordering::Greater,
        );
    }

    /// Folds in one live dataset's stored statistics (`None`: the segment recorded none).
    fn add(&mut self, stats: Option<&ArrayStats>) {
        self.datasets += 1;
        let Some(stats) = stats else { return };
        self.null_count = self.null_count.saturating_add(stats.null_count);
        self.row_count = self.row_count.saturating_add(stats.row_count);
        fold(&mut self.min, stats.min.as_ref(), std::cmp::Ordering::Less);
        fold(
            &mut self.max,
            stats.max.as_ref(),
            std::cmp::Ordering::Greater,
        );
    }
}

/// Maps the names of a segment's arrays, in segment order, to footer ordinals.
///
/// The writer adds each dataset's arrays in ordinal order, so a segment lists its datasets as
/// an increasing subsequence of the footer's. A cursor walking the footer therefore finds each
/// name with a comparison or a short scan, touching the footer sequentially; a name it does
/// not find within [`OrdinalCursor::SCAN`] entries (a segment written in another order) falls
/// back to the hash lookup, so no input costs more than that per name.
pub(crate) struct OrdinalCursor<'a> {
    atlas: &'a Atlas,
    next: usize,
}

impl<'a> OrdinalCursor<'a> {
    /// Footer entries scanned past the cursor before falling back to a hash lookup.
    const SCAN: usize = 64;

    pub(crate) fn new(atlas: &'a Atlas) -> Self {
        Self { atlas, next: 0 }
    }

    /// The ordinal of dataset `name`, if the footer names it.
    pub(crate) fn ordinal(&mut self, name: &str) -> Option<u32> {
        let datasets = &self.atlas.footer.datasets;
        let end = datasets.len().min(self.next.saturating_add(Self::SCAN));
        let found = (self.next..end)
            .find(|&i| datasets.name(i) == Some(name))
            .or_else(|| datasets.get_index_of(name))?;
        self.next = found + 1;
        u32::try_from(found).ok()
    }
}

/// Keeps `current` unless `candidate` compares `wanted` against it. Strings compare as bytes.
fn fold(
    current: &mut Option<StatValue>,
    candidate: Option<&StatValue>,
    wanted: std::cmp::Ordering,
) {
    let Some(candidate) = candidate else { return };
    let replace = match current {
        None => true,
        Some(existing) => compare(candidate, existing) == Some(wanted),
    };
    if replace {
        *current = Some(candidate.clone());
    }
}

fn compare(a: &StatValue, b: &StatValue) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (StatValue::Int(a), StatValue::Int(b)) => Some(a.cmp(b)),
        (StatValue::UInt(a), StatValue::UInt(b)) => Some(a.cmp(b)),
        (StatValue::Float(a), StatValue::Float(b)) => Some(a.total_cmp(b)),
        (StatValue::Bytes(a), StatValue::Bytes(b)) => Some(a.cmp(b)),
        (StatValue::TimestampNs(a), StatValue::TimestampNs(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn row(dataset: &str, ordinal: u32, stats: Option<&ArrayStats>) -> DatasetStats {
    let (min, max, null_count, row_count) = match stats {
        Some(s) => (s.min.clone(), s.max.clone(), s.null_count, s.row_count),
        None => (None, None, 0, 0),
    };
    DatasetStats {
        dataset: SmolStr::new(dataset),
        ordinal,
        min,
        max,
        null_count,
        row_count,
    }
}

impl Atlas {
    /// One row per live dataset holding `array`, in segment (= ordinal) order, from one open of
    /// that variable's segment. An array no dataset declares is `NoSuchArray`, without a request.
    ///
    /// A growing collection gives the rows of every part holding `array`, oldest part first.
    pub async fn array_stats_by_dataset(
        &self,
        array: &str,
    ) -> Result<Vec<DatasetStats>, AtlasError> {
        let mut rows = Vec::new();
        let mut declared = false;
        for member in self.members() {
            let base = member.ordinal_base;
            let done = member
                .for_each_live_array(array, |info, ordinal| {
                    rows.push(row(&info.name, base + ordinal, info.stats.as_ref()));
                })
                .await;
            skip_undeclared(done, &mut declared)?;
        }
        if !declared {
            return Err(AtlasError::NoSuchArray(array.to_owned()));
        }
        Ok(rows)
    }

    /// `array`'s statistics folded over every live dataset: one segment open, one pass over its
    /// arrays, linear in datasets, and no per-dataset row is built. An array no dataset declares
    /// is `NoSuchArray`, without a request.
    pub async fn array_stats(&self, array: &str) -> Result<CollectionStats, AtlasError> {
        let mut total = CollectionStats::default();
        let mut declared = false;
        for member in self.members() {
            let mut part = CollectionStats::default();
            let done = member
                .for_each_live_array(array, |info, _| part.add(info.stats.as_ref()))
                .await;
            skip_undeclared(done, &mut declared)?;
            total.merge(part);
        }
        if !declared {
            return Err(AtlasError::NoSuchArray(array.to_owned()));
        }
        Ok(total)
    }

    /// Calls `f` with every live dataset's entry in the segment of `array`, in segment (=
    /// ordinal) order, from one open of that segment. An unknown array is `NoSuchArray`, before
    /// any request; an entry for a dataset the footer does not name is `CorruptCollection`.
    async fn for_each_live_array(
        &self,
        array: &str,
        mut f: impl FnMut(&ArrayInfo, u32),
    ) -> Result<(), AtlasError> {
        let variable = self
            .variable_named(array)
            .filter(|&v| Some(v) != self.datasets_segment())
            .ok_or_else(|| AtlasError::NoSuchArray(array.to_owned()))?;
        let file = self.segment(variable).await?;
        let deleted = self.deleted();
        let mut ordinals = OrdinalCursor::new(self);
        for info in file.arrays() {
            let ordinal = ordinals
                .ordinal(&info.name)
                .ok_or_else(|| unnamed_entry(self.container.as_ref(), array, &info.name))?;
            if !deleted.contains(ordinal) {
                f(info, ordinal);
            }
        }
        Ok(())
    }
}

/// One member's (a growing collection's part's) answer: a part none of whose datasets
/// declares the array is skipped (the caller reports `NoSuchArray` only when no member
/// declares it); other failures stop the call.
fn skip_undeclared(done: Result<(), AtlasError>, declared: &mut bool) -> Result<(), AtlasError> {
    match done {
        Ok(()) => {
            *declared = true;
            Ok(())
        }
        Err(AtlasError::NoSuchArray(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A segment entry for a dataset the footer does not name: the segment and the footer disagree.
pub(crate) fn unnamed_entry(container: &str, segment: &str, dataset: &str) -> AtlasError {
    AtlasError::corrupt(
        container,
        format!("segment '{segment}'"),
        format!("holds an entry for dataset '{dataset}', which the footer does not name"),
    )
}

impl DatasetView<'_> {
    /// This dataset's statistics for `array`.
    pub async fn array_stats(&self, array: &str) -> Result<DatasetStats, AtlasError> {
        let meta = self.array_meta(array)?;
        let (_, info) = self.segment_entry(&meta).await?;
        Ok(row(self.name(), self.ordinal(), info.stats.as_ref()))
    }
}
