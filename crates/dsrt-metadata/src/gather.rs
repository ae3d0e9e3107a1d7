//! One Arrow column from values picked out of many rows, possibly of many tables.
//!
//! A dataset joins caches whose schemas need not agree: a column may be missing from some
//! caches (its values there are null) or have another type in another cache. A batch drawn
//! from the dataset still wants one Arrow array per column name, so the array's type follows
//! the values: one type (with nulls) when the values agree, a dense union of the types present
//! when they do not, and a null array when there is no value at all.

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, NullArray, UnionArray};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{ArrowError, DataType, Field, UnionFields};
use dsrt_schema::ValueRef;
use std::sync::Arc;

/// The kinds of value, in the order their union children take (also their type ids).
const KINDS: [(&str, DataType); 4] = [
    ("bool", DataType::Boolean),
    ("int64", DataType::Int64),
    ("float64", DataType::Float64),
    ("utf8", DataType::Utf8),
];

fn kind_of(value: &ValueRef<'_>) -> Option<usize> {
    match value {
        ValueRef::Null => None,
        ValueRef::Bool(_) => Some(0),
        ValueRef::Int64(_) => Some(1),
        ValueRef::Float64(_) => Some(2),
        ValueRef::Utf8(_) => Some(3),
    }
}

/// The values of one column in row order as one Arrow array: `Boolean`, `Int64`, `Float64` or
/// `Utf8` (nullable) when every non-null value has that type, `Null` when every value is
/// null, and a dense `Union` of the types present (children named `bool`, `int64`, `float64`,
/// `utf8`, type ids 0 to 3) when they differ; a null value of a union lies in its first
/// child.
pub fn gather_column(values: &[ValueRef<'_>]) -> ArrayRef {
    let mut present = [false; 4];
    for value in values {
        if let Some(kind) = kind_of(value) {
            present[kind] = true;
        }
    }
    let kinds: Vec<usize> = (0..KINDS.len()).filter(|&k| present[k]).collect();
    match kinds.as_slice() {
        [] => Arc::new(NullArray::new(values.len())),
        [kind] => typed(*kind, values.iter()),
        _ => union(&kinds, values)
            .unwrap_or_else(|e| unreachable!("the union's parts are built to agree: {e}")),
    }
}

/// The values of `kind` (or null) among `values`, as an array of that kind.
fn typed<'a, 'v: 'a>(kind: usize, values: impl Iterator<Item = &'a ValueRef<'v>>) -> ArrayRef {
    let (low, _) = values.size_hint();
    match kind {
        0 => {
            let mut b = BooleanBuilder::with_capacity(low);
            values.for_each(|v| b.append_option(as_bool(v)));
            Arc::new(b.finish())
        }
        1 => {
            let mut b = Int64Builder::with_capacity(low);
            values.for_each(|v| b.append_option(as_int64(v)));
            Arc::new(b.finish())
        }
        2 => {
            let mut b = Float64Builder::with_capacity(low);
            values.for_each(|v| b.append_option(as_float64(v)));
            Arc::new(b.finish())
        }
        _ => {
            let mut b = StringBuilder::with_capacity(low, 0);
            values.for_each(|v| b.append_option(as_utf8(v)));
            Arc::new(b.finish())
        }
    }
}

fn as_bool(v: &ValueRef<'_>) -> Option<bool> {
    match *v {
        ValueRef::Bool(b) => Some(b),
        _ => None,
    }
}

fn as_int64(v: &ValueRef<'_>) -> Option<i64> {
    match *v {
        ValueRef::Int64(n) => Some(n),
        _ => None,
    }
}

fn as_float64(v: &ValueRef<'_>) -> Option<f64> {
    match *v {
        ValueRef::Float64(x) => Some(x),
        _ => None,
    }
}

fn as_utf8<'a>(v: &ValueRef<'a>) -> Option<&'a str> {
    match *v {
        ValueRef::Utf8(s) => Some(s),
        _ => None,
    }
}

/// A dense union over `kinds` (two or more, ascending): each value goes to its kind's child, a
/// null to the first child.
fn union(kinds: &[usize], values: &[ValueRef<'_>]) -> Result<ArrayRef, ArrowError> {
    let mut type_ids = Vec::with_capacity(values.len());
    let mut offsets = Vec::with_capacity(values.len());
    let mut counts = [0i32; 4];
    for value in values {
        let kind = kind_of(value).unwrap_or(kinds[0]);
        type_ids.push(i8::try_from(kind).unwrap_or(0));
        offsets.push(counts[kind]);
        counts[kind] += 1;
    }
    let children = kinds
        .iter()
        .map(|&kind| {
            let mine = values
                .iter()
                .filter(move |v| kind_of(v).unwrap_or(kinds[0]) == kind);
            typed(kind, mine)
        })
        .collect();
    let fields = UnionFields::try_new(
        kinds.iter().map(|&k| i8::try_from(k).unwrap_or(0)),
        kinds
            .iter()
            .map(|&k| Field::new(KINDS[k].0, KINDS[k].1.clone(), true)),
    )?;
    let array = UnionArray::try_new(
        fields,
        ScalarBuffer::from(type_ids),
        Some(ScalarBuffer::from(offsets)),
        children,
    )?;
    Ok(Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;

    #[test]
    fn values_of_one_type_make_a_nullable_array_of_it() {
        let values = [ValueRef::Int64(3), ValueRef::Null, ValueRef::Int64(-1)];
        let array = gather_column(&values);
        assert_eq!(array.data_type(), &DataType::Int64);
        let ints = array.as_primitive::<Int64Type>();
        assert_eq!(ints.iter().collect::<Vec<_>>(), [Some(3), None, Some(-1)]);
        let strings = gather_column(&[ValueRef::Utf8("a"), ValueRef::Null]);
        assert_eq!(strings.as_string::<i32>().value(0), "a");
        assert!(strings.is_null(1));
        let flags = gather_column(&[ValueRef::Bool(true), ValueRef::Bool(false)]);
        assert_eq!(flags.null_count(), 0);
        assert!(flags.as_boolean().value(0) && !flags.as_boolean().value(1));
    }

    #[test]
    fn no_value_at_all_is_a_null_array() {
        let array = gather_column(&[ValueRef::Null, ValueRef::Null]);
        assert_eq!(array.data_type(), &DataType::Null);
        assert_eq!(array.len(), 2);
        assert_eq!(gather_column(&[]).len(), 0);
    }

    #[test]
    fn values_of_several_types_make_a_dense_union_in_row_order() {
        let values = [
            ValueRef::Float64(0.5),
            ValueRef::Int64(7),
            ValueRef::Null,
            ValueRef::Float64(2.0),
        ];
        let array = gather_column(&values);
        let union = array.as_any().downcast_ref::<UnionArray>().unwrap();
        assert_eq!(union.len(), 4);
        assert_eq!(union.type_ids().to_vec(), [2, 1, 1, 2]);
        let at = |i: usize| union.value(i);
        assert_eq!(at(0).as_primitive::<Float64Type>().value(0), 0.5);
        assert_eq!(at(1).as_primitive::<Int64Type>().value(0), 7);
        assert!(at(2).is_null(0));
        assert_eq!(at(3).as_primitive::<Float64Type>().value(0), 2.0);
    }
}
