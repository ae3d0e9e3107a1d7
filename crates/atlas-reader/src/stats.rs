//! Statistics: what array-format stored per array, folded over the live datasets.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::view::DatasetView;
use array_format::{ArrayStats, StatValue};
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
    fn add(&mut self, row: &DatasetStats) {
        self.datasets += 1;
        self.null_count = self.null_count.saturating_add(row.null_count);
        self.row_count = self.row_count.saturating_add(row.row_count);
        fold(&mut self.min, row.min.as_ref(), std::cmp::Ordering::Less);
        fold(&mut self.max, row.max.as_ref(), std::cmp::Ordering::Greater);
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
    /// that variable's segment. An unknown array yields no rows and no request.
    pub async fn array_stats_by_dataset(
        &self,
        array: &str,
    ) -> Result<Vec<DatasetStats>, AtlasError> {
        let Some(variable) = self.variable_named(array) else {
            return Ok(Vec::new());
        };
        let file = self.segment(variable).await?;
        let deleted = self.deleted();
        let mut rows = Vec::with_capacity(file.arrays().len());
        for info in file.arrays() {
            let Some(ordinal) = self.ordinal_of(&info.name) else {
                tracing::warn!(array, dataset = %info.name, "segment holds a dataset the footer does not name");
                continue;
            };
            if !deleted.contains(ordinal) {
                rows.push(row(&info.name, ordinal, info.stats.as_ref()));
            }
        }
        Ok(rows)
    }

    /// `array`'s statistics folded over every live dataset: one segment open, linear in datasets.
    pub async fn array_stats(&self, array: &str) -> Result<CollectionStats, AtlasError> {
        let mut total = CollectionStats::default();
        for row in self.array_stats_by_dataset(array).await? {
            total.add(&row);
        }
        Ok(total)
    }
}

impl DatasetView<'_> {
    /// This dataset's statistics for `array`.
    pub async fn array_stats(&self, array: &str) -> Result<DatasetStats, AtlasError> {
        let meta = self.array_meta(array)?;
        let (_, info) = self.segment_entry(&meta).await?;
        Ok(row(self.name(), self.ordinal(), info.stats.as_ref()))
    }
}
