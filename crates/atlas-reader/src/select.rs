//! Selection: which live datasets match conditions on their dataset attributes and on their
//! arrays' stored statistics, answered from segment footers without reading array data.
//!
//! Every condition is checked against the collection footer first (a key or array that no
//! dataset declares, a value no declared type can compare with), so a malformed selection costs
//! no request. Then each segment involved is opened once (the `_datasets` segment for every
//! attribute condition, one segment per array named), all of them concurrently, and each
//! condition is evaluated over all datasets at once from what that segment's footer holds.
//! A segment a selection opens first is fetched for its footer alone (its tail), not whole as a
//! data read would fetch a small one: the data is not needed. Segments stay open on the
//! [`Atlas`], so a second selection over the same keys and arrays makes no request.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::stats::{unnamed_entry, OrdinalCursor};
use crate::view::SchemaView;
use array_format::{ArrayFile, AttributeValue, StatValue};
use atlas_footer::{DType, DATASETS_SEGMENT};
use std::cmp::Ordering;

/// A value a condition compares with.
///
/// Numbers compare by value whatever their widths, as NumPy compares them: an `Int` equals an
/// integer attribute of any width and a float attribute of the same value; a `Float` compares
/// exactly with the stored value widened to `f64` (so `0.1` does not equal a `Float32` attribute
/// written as `0.1`). Strings equal strings, bytes equal bytes, booleans equal booleans only.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SelectValue {
    /// A boolean; compares with `Bool` attributes only.
    Bool(bool),
    /// An integer, wide enough for every signed and unsigned 64-bit value.
    Int(i128),
    /// A float; NaN is refused, since it compares with nothing.
    Float(f64),
    /// Text; compares with `String` attributes and with the statistics of `String` arrays.
    String(String),
    /// Bytes; compares with `Binary` attributes and with the statistics of `Binary` arrays.
    Binary(Vec<u8>),
    /// Nanoseconds since the Unix epoch; compares with the statistics of `TimestampNs` arrays.
    TimestampNs(i64),
}

impl SelectValue {
    /// What the value is, for messages.
    fn describe(&self) -> String {
        match self {
            Self::Bool(v) => format!("the boolean {v}"),
            Self::Int(v) => format!("the integer {v}"),
            Self::Float(v) => format!("the float {v}"),
            Self::String(v) => format!("the string {v:?}"),
            Self::Binary(v) => format!("{} bytes", v.len()),
            Self::TimestampNs(v) => format!("the timestamp {v} ns"),
        }
    }

    fn number(&self) -> Option<Number> {
        match *self {
            Self::Int(v) => Some(Number::Int(v)),
            Self::Float(v) => Some(Number::Float(v)),
            _ => None,
        }
    }
}

/// A stored statistic of one array of one dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stat {
    /// The smallest non-fill value.
    Min,
    /// The largest non-fill value.
    Max,
    /// The elements equal to the fill value.
    NullCount,
}

impl Stat {
    /// Every statistic, as [`Stat::name`] spells it.
    pub const NAMES: [&'static str; 3] = ["min", "max", "null_count"];

    /// The statistic called `name` (`min`, `max`, `null_count`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "min" => Some(Self::Min),
            "max" => Some(Self::Max),
            "null_count" => Some(Self::NullCount),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Min => "min",
            Self::Max => "max",
            Self::NullCount => "null_count",
        }
    }
}

/// How a statistic compares with a condition's value: `stat <op> value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Comparison {
    /// Every operator, as [`Comparison::symbol`] spells it.
    pub const SYMBOLS: [&'static str; 6] = ["<", "<=", ">", ">=", "==", "!="];

    /// The comparison spelled `symbol` (`<`, `<=`, `>`, `>=`, `==`, `!=`).
    pub fn from_symbol(symbol: &str) -> Option<Self> {
        match symbol {
            "<" => Some(Self::Lt),
            "<=" => Some(Self::Le),
            ">" => Some(Self::Gt),
            ">=" => Some(Self::Ge),
            "==" => Some(Self::Eq),
            "!=" => Some(Self::Ne),
            _ => None,
        }
    }

    /// Its symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Eq => "==",
            Self::Ne => "!=",
        }
    }

    /// Whether `stat <op> value` holds, given how the two compare (`None`: they do not).
    fn holds(self, ordering: Option<Ordering>) -> bool {
        let Some(ordering) = ordering else {
            return false;
        };
        match self {
            Self::Lt => ordering == Ordering::Less,
            Self::Le => ordering != Ordering::Greater,
            Self::Gt => ordering == Ordering::Greater,
            Self::Ge => ordering != Ordering::Less,
            Self::Eq => ordering == Ordering::Equal,
            Self::Ne => ordering != Ordering::Equal,
        }
    }
}

/// Dataset attribute `key` must equal one of `accepted`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttrCondition {
    /// The dataset-level attribute key.
    pub key: String,
    /// The values accepted; none accepted matches no dataset.
    pub accepted: Vec<SelectValue>,
}

/// The stored statistic `stat` of `array` must compare `op` with `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct StatCondition {
    /// The array (variable) name.
    pub array: String,
    /// Which statistic.
    pub stat: Stat,
    /// How it must compare with `value`.
    pub op: Comparison,
    /// The value it is compared with.
    pub value: SelectValue,
}

/// Conditions a dataset must all meet to be selected. With none, every live dataset is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Conditions on dataset-level attributes.
    pub attrs: Vec<AttrCondition>,
    /// Conditions on the arrays' stored statistics.
    pub stats: Vec<StatCondition>,
}

impl Selection {
    /// No conditions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds: attribute `key` equals one of `accepted`.
    pub fn attr_in(mut self, key: impl Into<String>, accepted: Vec<SelectValue>) -> Self {
        self.attrs.push(AttrCondition {
            key: key.into(),
            accepted,
        });
        self
    }

    /// Adds: statistic `stat` of `array` compares `op` with `value`.
    pub fn stat(
        mut self,
        array: impl Into<String>,
        stat: Stat,
        op: Comparison,
        value: SelectValue,
    ) -> Self {
        self.stats.push(StatCondition {
            array: array.into(),
            stat,
            op,
            value,
        });
        self
    }

    /// Adds a statistic condition whose statistic and operator are given by name, as a binding
    /// receives them; an unknown one is [`AtlasError::InvalidQuery`] naming the condition
    /// (`where[i]`, its position among the statistic conditions).
    pub fn stat_named(
        self,
        array: impl Into<String>,
        stat: &str,
        op: &str,
        value: SelectValue,
    ) -> Result<Self, AtlasError> {
        let condition = format!("where[{}]", self.stats.len());
        let parsed_stat = Stat::from_name(stat).ok_or_else(|| {
            invalid(
                &condition,
                format!(
                    "unknown statistic {stat:?} (expected one of {})",
                    Stat::NAMES.join(", ")
                ),
            )
        })?;
        let parsed_op = Comparison::from_symbol(op).ok_or_else(|| {
            invalid(
                &condition,
                format!(
                    "unknown comparison {op:?} (expected one of {})",
                    Comparison::SYMBOLS.join(" ")
                ),
            )
        })?;
        Ok(self.stat(array, parsed_stat, parsed_op, value))
    }
}

fn invalid(condition: &str, reason: impl Into<String>) -> AtlasError {
    AtlasError::InvalidQuery {
        condition: condition.to_owned(),
        reason: reason.into(),
    }
}

/// A number of any stored width, compared exactly.
#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn compare(self, other: Number) -> Option<Ordering> {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
            (Number::Float(a), Number::Float(b)) => a.partial_cmp(&b),
            (Number::Int(a), Number::Float(b)) => int_float(a, b),
            (Number::Float(a), Number::Int(b)) => int_float(b, a).map(Ordering::reverse),
        }
    }
}

/// How integer `i` compares with float `f`, exactly (no rounding of `i` to a float).
fn int_float(i: i128, f: f64) -> Option<Ordering> {
    // 2^127: every i128 is below it, and no i128 is below its negation.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if f.is_nan() {
        return None;
    }
    if f >= LIMIT {
        return Some(Ordering::Less);
    }
    if f < -LIMIT {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    // In range and integral, so the cast is exact.
    #[allow(clippy::cast_possible_truncation)]
    let whole_int = whole as i128;
    Some(i.cmp(&whole_int).then_with(|| {
        if f > whole {
            Ordering::Less
        } else if f < whole {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }))
}

fn attr_number(value: &AttributeValue) -> Option<Number> {
    Some(match *value {
        AttributeValue::Int8(v) => Number::Int(v.into()),
        AttributeValue::Int16(v) => Number::Int(v.into()),
        AttributeValue::Int32(v) => Number::Int(v.into()),
        AttributeValue::Int64(v) => Number::Int(v.into()),
        AttributeValue::UInt8(v) => Number::Int(v.into()),
        AttributeValue::UInt16(v) => Number::Int(v.into()),
        AttributeValue::UInt32(v) => Number::Int(v.into()),
        AttributeValue::UInt64(v) => Number::Int(v.into()),
        AttributeValue::Float32(v) => Number::Float(v.into()),
        AttributeValue::Float64(v) => Number::Float(v),
        _ => return None,
    })
}

/// Whether a stored attribute equals `value`. Values of types that cannot compare are unequal.
fn attr_equals(stored: &AttributeValue, value: &SelectValue) -> bool {
    match (stored, value) {
        (AttributeValue::Bool(a), SelectValue::Bool(b)) => a == b,
        (AttributeValue::String(a), SelectValue::String(b)) => a.as_str() == b,
        (AttributeValue::Binary(a), SelectValue::Binary(b)) => a.as_ref() == b.as_slice(),
        (stored, value) => match (attr_number(stored), value.number()) {
            (Some(a), Some(b)) => a.compare(b) == Some(Ordering::Equal),
            _ => false,
        },
    }
}

/// Whether a value can equal an attribute declared `dtype`: the check made before any request.
fn attr_accepts(dtype: &DType, value: &SelectValue) -> bool {
    match value {
        SelectValue::Bool(_) => matches!(dtype, DType::Bool),
        SelectValue::Int(_) | SelectValue::Float(_) => is_numeric(dtype),
        SelectValue::String(_) => matches!(dtype, DType::String),
        SelectValue::Binary(_) => matches!(dtype, DType::Binary),
        SelectValue::TimestampNs(_) => false,
    }
}

fn is_numeric(dtype: &DType) -> bool {
    matches!(
        dtype,
        DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::Int64
            | DType::UInt8
            | DType::UInt16
            | DType::UInt32
            | DType::UInt64
            | DType::Float32
            | DType::Float64
    )
}

/// Whether array-format keeps a min and max for `dtype` (it orders numbers, strings, bytes and
/// timestamps; booleans and lists have no statistic to compare).
fn is_ordered(dtype: &DType) -> bool {
    is_numeric(dtype) || matches!(dtype, DType::String | DType::Binary | DType::TimestampNs)
}

/// Whether `value` can compare with statistic `stat` of an array declared `dtype`. A dtype with
/// no order accepts anything: its min and max are absent, so the condition matches nothing.
fn stat_accepts(stat: Stat, dtype: &DType, value: &SelectValue) -> bool {
    match (stat, value) {
        (Stat::NullCount, value) => value.number().is_some(),
        _ if !is_ordered(dtype) => true,
        (_, SelectValue::Int(_) | SelectValue::Float(_)) => is_numeric(dtype),
        (_, SelectValue::String(_)) => matches!(dtype, DType::String),
        (_, SelectValue::Binary(_)) => matches!(dtype, DType::Binary),
        (_, SelectValue::TimestampNs(_)) => matches!(dtype, DType::TimestampNs),
        (_, SelectValue::Bool(_)) => false,
    }
}

/// How a stored min or max compares with `value` (`None`: they cannot compare).
fn stat_compare(stored: &StatValue, value: &SelectValue) -> Option<Ordering> {
    match (stored, value) {
        (StatValue::Int(a), v) => Number::Int((*a).into()).compare(v.number()?),
        (StatValue::UInt(a), v) => Number::Int((*a).into()).compare(v.number()?),
        (StatValue::Float(a), v) => Number::Float(*a).compare(v.number()?),
        (StatValue::Bytes(a), SelectValue::String(b)) => Some(a.as_slice().cmp(b.as_bytes())),
        (StatValue::Bytes(a), SelectValue::Binary(b)) => Some(a.as_slice().cmp(b.as_slice())),
        (StatValue::TimestampNs(a), SelectValue::TimestampNs(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn refuse_nan(condition: &str, value: &SelectValue) -> Result<(), AtlasError> {
    match value {
        SelectValue::Float(v) if v.is_nan() => Err(invalid(
            condition,
            "NaN compares with nothing; select datasets by their null_count instead",
        )),
        _ => Ok(()),
    }
}

/// The types a key or array is declared with across the footer's schemas, for messages.
fn listed(dtypes: &[&DType]) -> String {
    let mut names: Vec<String> = dtypes.iter().map(|d| d.to_string()).collect();
    names.sort();
    names.dedup();
    names.join(" or ")
}

impl Atlas {
    /// The ordinals, ascending, of the live datasets that meet every condition of `selection`.
    ///
    /// - An attribute condition holds where the dataset has the attribute and it equals one of
    ///   the accepted values (see [`SelectValue`] for how values compare).
    /// - A statistic condition holds where the dataset has the array and the segment stored the
    ///   statistic: a min or max is absent when every element is fill or the dtype has no
    ///   order, and then no comparison holds, `!=` included.
    ///
    /// Refused before any request, as [`AtlasError::InvalidQuery`] naming the condition: an
    /// attribute key or an array that no dataset of the collection declares (a misspelt name
    /// would otherwise select nothing, silently), a value that no declared type of the key or
    /// array can compare with, and NaN. Where datasets declare one key with several types, a
    /// value that fits one of them is accepted and datasets of the others do not match.
    ///
    /// Costs one read per segment involved and not yet open (the `_datasets` segment for the
    /// attribute conditions, one segment per array), all sent at once; none with no
    /// conditions, and none for segments an earlier call opened. Each read is the segment's
    /// tail (its footer: about 512 bytes per dataset holding the array, plus 64 KiB), one
    /// request below 2 MiB (about 4,000 datasets), a second only for a footer larger than that
    /// estimate.
    ///
    /// A growing collection answers part by part, oldest first, each part opening its own
    /// segments (all of one part's at once). A condition is refused only when every part
    /// refuses it: a key or array only later parts declare selects nothing in the others.
    pub async fn select(&self, selection: &Selection) -> Result<Vec<u32>, AtlasError> {
        if self.growing.is_none() {
            return self.own_select(selection).await;
        }
        let mut out = Vec::new();
        let mut refused = None;
        let mut answered = false;
        for part in &self.parts {
            match part.own_select(selection).await {
                Ok(ordinals) => {
                    answered = true;
                    out.extend(ordinals.into_iter().map(|o| part.ordinal_base + o));
                }
                Err(e @ AtlasError::InvalidQuery { .. }) => refused = refused.or(Some(e)),
                Err(e) => return Err(e),
            }
        }
        match (answered, refused) {
            (false, Some(e)) => Err(e),
            _ => Ok(out),
        }
    }

    /// The names, in ordinal order, of the live datasets that meet every condition of
    /// `selection` ([`Atlas::select`], whose ordinals span every part of a growing collection).
    pub async fn select_names(&self, selection: &Selection) -> Result<Vec<String>, AtlasError> {
        let ordinals = self.select(selection).await?;
        Ok((ordinals.into_iter())
            .filter_map(|o| self.dataset_at(o).map(|d| d.name().to_owned()))
            .collect())
    }

    async fn own_select(&self, selection: &Selection) -> Result<Vec<u32>, AtlasError> {
        let datasets = self.footer.datasets.len();
        let deleted = self.deleted();
        let mut keep: Vec<bool> = (0..datasets)
            .map(|o| u32::try_from(o).is_ok_and(|o| !deleted.contains(o)))
            .collect();
        let variables = self.check(selection)?;
        let files =
            futures::future::try_join_all(variables.iter().map(|&v| self.segment_footer(v)))
                .await?;
        let (attrs_file, array_files) = if selection.attrs.is_empty() {
            (None, files.as_slice())
        } else {
            (files.first().copied(), files.get(1..).unwrap_or_default())
        };
        let mut hit = vec![false; datasets];
        if let Some(file) = attrs_file {
            for condition in &selection.attrs {
                hit.fill(false);
                let column = file.attribute_column(&condition.key);
                self.for_each_entry(file, DATASETS_SEGMENT, |i, ordinal| {
                    let stored = column.and_then(|c| c.get(i)).and_then(Option::as_ref);
                    hit[ordinal] = stored
                        .is_some_and(|s| condition.accepted.iter().any(|v| attr_equals(s, v)));
                })?;
                and(&mut keep, &hit);
            }
        }
        for (condition, file) in selection.stats.iter().zip(array_files) {
            hit.fill(false);
            self.for_each_entry(file, &condition.array, |i, ordinal| {
                let stats = file.arrays().get(i).and_then(|info| info.stats.as_ref());
                hit[ordinal] = stats.is_some_and(|s| {
                    let ordering = match condition.stat {
                        Stat::Min => s
                            .min
                            .as_ref()
                            .and_then(|m| stat_compare(m, &condition.value)),
                        Stat::Max => s
                            .max
                            .as_ref()
                            .and_then(|m| stat_compare(m, &condition.value)),
                        Stat::NullCount => condition
                            .value
                            .number()
                            .and_then(|v| Number::Int(s.null_count.into()).compare(v)),
                    };
                    condition.op.holds(ordering)
                });
            })?;
            and(&mut keep, &hit);
        }
        Ok(keep
            .iter()
            .zip(0u32..)
            .filter_map(|(&k, o)| k.then_some(o))
            .collect())
    }

    /// Checks `selection` against the footer and returns the segments to open: `_datasets`
    /// first when there are attribute conditions, then one per statistic condition, in order.
    fn check(&self, selection: &Selection) -> Result<Vec<u32>, AtlasError> {
        let schemas: Vec<SchemaView<'_>> = (0..self.footer.schema_pool.len())
            .filter_map(|i| u32::try_from(i).ok())
            .filter_map(|i| self.resolved_schema(i).map(SchemaView::of))
            .collect();
        let mut variables = Vec::new();
        for condition in &selection.attrs {
            let at = format!("attrs[{:?}]", condition.key);
            let dtypes: Vec<&DType> = schemas
                .iter()
                .filter_map(|s| s.attr(&condition.key))
                .collect();
            if dtypes.is_empty() {
                return Err(invalid(
                    &at,
                    format!("no dataset declares an attribute {:?}", condition.key),
                ));
            }
            for value in &condition.accepted {
                refuse_nan(&at, value)?;
                if !dtypes.iter().any(|d| attr_accepts(d, value)) {
                    return Err(invalid(
                        &at,
                        format!(
                            "{} cannot equal attribute {:?}, declared {}",
                            value.describe(),
                            condition.key,
                            listed(&dtypes)
                        ),
                    ));
                }
            }
        }
        if !selection.attrs.is_empty() {
            // Every key is declared, so some dataset has attributes and the segment exists.
            let datasets = self.datasets_segment().ok_or_else(|| {
                AtlasError::corrupt(
                    self.container.as_ref(),
                    "variables",
                    "dataset attributes declared, no _datasets segment",
                )
            })?;
            variables.push(datasets);
        }
        for (i, condition) in selection.stats.iter().enumerate() {
            let at = format!(
                "where[{i}] ({:?} {} {})",
                condition.array,
                condition.stat.name(),
                condition.op.symbol()
            );
            let dtypes: Vec<&DType> = schemas
                .iter()
                .filter_map(|s| s.array(&condition.array).map(|a| a.dtype()))
                .collect();
            let variable = self
                .variable_named(&condition.array)
                .filter(|&v| Some(v) != self.datasets_segment() && !dtypes.is_empty())
                .ok_or_else(|| {
                    invalid(
                        &at,
                        format!("no dataset declares an array named {:?}", condition.array),
                    )
                })?;
            refuse_nan(&at, &condition.value)?;
            if !dtypes
                .iter()
                .any(|d| stat_accepts(condition.stat, d, &condition.value))
            {
                return Err(invalid(
                    &at,
                    format!(
                        "{} cannot compare with the {} of array {:?}, declared {}",
                        condition.value.describe(),
                        condition.stat.name(),
                        condition.array,
                        listed(&dtypes)
                    ),
                ));
            }
            variables.push(variable);
        }
        Ok(variables)
    }

    /// Calls `f(position in the segment, ordinal)` for every entry of `file` (the segment of
    /// `segment`), live or not; an entry the footer does not name is `CorruptCollection`.
    fn for_each_entry(
        &self,
        file: &ArrayFile,
        segment: &str,
        mut f: impl FnMut(usize, usize),
    ) -> Result<(), AtlasError> {
        let mut ordinals = OrdinalCursor::new(self);
        for (i, info) in file.arrays().iter().enumerate() {
            let ordinal = ordinals
                .ordinal(&info.name)
                .and_then(|o| usize::try_from(o).ok())
                .ok_or_else(|| unnamed_entry(self.container.as_ref(), segment, &info.name))?;
            f(i, ordinal);
        }
        Ok(())
    }
}

fn and(keep: &mut [bool], hit: &[bool]) {
    for (k, h) in keep.iter_mut().zip(hit) {
        *k &= *h;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn integers_and_floats_compare_exactly() {
        let i = |v: i128| Number::Int(v);
        let f = |v: f64| Number::Float(v);
        assert_eq!(i(3).compare(f(3.0)), Some(Ordering::Equal));
        assert_eq!(i(3).compare(f(3.5)), Some(Ordering::Less));
        assert_eq!(i(-3).compare(f(-3.5)), Some(Ordering::Greater));
        assert_eq!(f(3.5).compare(i(3)), Some(Ordering::Greater));
        // 2^53 + 1 is no f64: rounding it would call it equal to 2^53.
        let big = (1i128 << 53) + 1;
        assert_eq!(
            i(big).compare(f(9_007_199_254_740_992.0)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            i(i128::from(u64::MAX)).compare(f(1e300)),
            Some(Ordering::Less)
        );
        assert_eq!(i(i128::MIN).compare(f(-1e300)), Some(Ordering::Greater));
        assert_eq!(i(1).compare(f(f64::NAN)), None);
        assert_eq!(
            f(f64::INFINITY).compare(i(i128::MAX)),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn attributes_equal_by_value_across_widths_and_not_across_kinds() {
        assert!(attr_equals(&AttributeValue::Int8(5), &SelectValue::Int(5)));
        assert!(attr_equals(
            &AttributeValue::UInt64(u64::MAX),
            &SelectValue::Int(u64::MAX.into())
        ));
        assert!(attr_equals(
            &AttributeValue::Float64(2.0),
            &SelectValue::Int(2)
        ));
        assert!(attr_equals(
            &AttributeValue::Float32(0.5),
            &SelectValue::Float(0.5)
        ));
        // The stored f32 widened, as NumPy compares `float32(0.1) == 0.1`.
        assert!(!attr_equals(
            &AttributeValue::Float32(0.1),
            &SelectValue::Float(0.1)
        ));
        assert!(attr_equals(
            &AttributeValue::String("north".into()),
            &SelectValue::String("north".into())
        ));
        assert!(!attr_equals(
            &AttributeValue::String("north".into()),
            &SelectValue::String("North".into())
        ));
        assert!(!attr_equals(
            &AttributeValue::Bool(true),
            &SelectValue::Int(1)
        ));
        assert!(!attr_equals(
            &AttributeValue::Int32(1),
            &SelectValue::Bool(true)
        ));
        assert!(!attr_equals(
            &AttributeValue::Int32List(vec![1].into()),
            &SelectValue::Int(1)
        ));
    }

    #[test]
    fn a_value_must_fit_the_declared_type() {
        assert!(attr_accepts(&DType::Int16, &SelectValue::Float(1.5)));
        assert!(!attr_accepts(
            &DType::Int16,
            &SelectValue::String("1".into())
        ));
        assert!(!attr_accepts(&DType::Int16, &SelectValue::Bool(true)));
        assert!(!attr_accepts(&DType::Bool, &SelectValue::Int(1)));
        let list = DType::List {
            child: Box::new(DType::Int32),
        };
        assert!(!attr_accepts(&list, &SelectValue::Int(1)));
        assert!(stat_accepts(
            Stat::Max,
            &DType::Float32,
            &SelectValue::Int(300)
        ));
        assert!(!stat_accepts(
            Stat::Max,
            &DType::Float32,
            &SelectValue::String("x".into())
        ));
        assert!(stat_accepts(
            Stat::Min,
            &DType::String,
            &SelectValue::String("a".into())
        ));
        assert!(!stat_accepts(
            Stat::NullCount,
            &DType::String,
            &SelectValue::String("a".into())
        ));
        assert!(stat_accepts(
            Stat::NullCount,
            &DType::String,
            &SelectValue::Int(0)
        ));
        assert!(!stat_accepts(
            Stat::Min,
            &DType::TimestampNs,
            &SelectValue::Int(0)
        ));
        // No order, no min: any value is accepted and matches nothing.
        assert!(stat_accepts(
            Stat::Min,
            &DType::Bool,
            &SelectValue::Bool(true)
        ));
    }

    #[test]
    fn comparisons_hold_as_spelt_and_never_without_an_ordering() {
        use Ordering::{Equal, Greater, Less};
        let table = [
            ("<", [true, false, false]),
            ("<=", [true, true, false]),
            (">", [false, false, true]),
            (">=", [false, true, true]),
            ("==", [false, true, false]),
            ("!=", [true, false, true]),
        ];
        for (symbol, expected) in table {
            let op = Comparison::from_symbol(symbol).unwrap();
            assert_eq!(op.symbol(), symbol);
            let got = [Less, Equal, Greater].map(|o| op.holds(Some(o)));
            assert_eq!(got, expected, "{symbol}");
            assert!(!op.holds(None), "{symbol}");
        }
        assert_eq!(Comparison::from_symbol("=<"), None);
        for name in Stat::NAMES {
            assert_eq!(Stat::from_name(name).unwrap().name(), name);
        }
    }

    #[test]
    fn stored_statistics_compare_with_values_of_their_kind() {
        let float = StatValue::Float(300.5);
        assert_eq!(
            stat_compare(&float, &SelectValue::Int(300)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            stat_compare(&StatValue::UInt(7), &SelectValue::Float(7.0)),
            Some(Ordering::Equal)
        );
        let text = StatValue::Bytes(b"b".to_vec());
        assert_eq!(
            stat_compare(&text, &SelectValue::String("a".into())),
            Some(Ordering::Greater)
        );
        assert_eq!(stat_compare(&text, &SelectValue::Int(1)), None);
        assert_eq!(
            stat_compare(&StatValue::TimestampNs(5), &SelectValue::TimestampNs(6)),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn unknown_names_are_refused_naming_the_condition() {
        let error = Selection::new()
            .stat_named("t2m", "mean", ">", SelectValue::Int(1))
            .unwrap_err();
        assert_eq!(error.kind(), "invalid_query");
        assert_eq!(error.field(), Some("where[0]"));
        assert!(error.to_string().contains("\"mean\""), "{error}");
        let error = Selection::new()
            .stat("a", Stat::Min, Comparison::Lt, SelectValue::Int(1))
            .stat_named("t2m", "max", "=>", SelectValue::Int(1))
            .unwrap_err();
        assert_eq!(error.field(), Some("where[1]"));
        assert!(error.to_string().contains("\"=>\""), "{error}");
    }
}
