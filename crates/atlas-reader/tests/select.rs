//! Selection by attributes and stored statistics: the answer equals a brute-force evaluation
//! over 2,000 written datasets, deleted ones excluded, within one request per segment involved;
//! malformed selections are refused before any request.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use array_format::FillValue;
use atlas_reader::{Atlas, AtlasError, Comparison, SelectValue, Selection, Stat};
use atlas_store::CountingStore;
use atlas_writer::{ArraySpec, Attr, DatasetSpec};
use common::*;
use ndarray::{ArrayD, IxDyn};
use std::sync::Arc;

const DATASETS: usize = 2_000;
const FILL: f32 = -999.0;

/// What dataset `i` was written with, for the brute-force evaluation.
struct Written {
    member: i32,
    region: &'static str,
    /// `None`: the dataset has no `flag` attribute.
    flag: Option<bool>,
    /// `None`: no `t2m` array; `Some(None)`: every element fill (no min or max).
    t2m: Option<Option<(f32, f32)>>,
    t2m_nulls: u64,
}

const REGIONS: [&str; 4] = ["north", "south", "east", "west"];

fn written(i: usize) -> Written {
    let has_t2m = i % 13 != 0;
    let all_fill = i % 97 == 0;
    let base = 250.0 + (i % 70) as f32;
    Written {
        member: (i % 50) as i32,
        region: REGIONS[i % 4],
        flag: (i % 3 != 0).then_some(i % 2 == 0),
        t2m: has_t2m.then_some((!all_fill).then_some((base, base + (i % 11) as f32))),
        t2m_nulls: if all_fill { 8 } else { (i % 5) as u64 },
    }
}

fn dataset(i: usize) -> DatasetSpec {
    let w = written(i);
    let mut spec = DatasetSpec::new(format!("station_{i:05}"))
        .attr("member", Attr::Int32(w.member))
        .attr("region", Attr::from(w.region))
        .attr("station", Attr::Int64(i as i64));
    if let Some(flag) = w.flag {
        spec = spec.attr("flag", Attr::Bool(flag));
    }
    if let Some(range) = w.t2m {
        let values: Vec<f32> = (0..8)
            .map(|k| match range {
                None => FILL,
                Some(_) if (k as u64) < w.t2m_nulls => FILL,
                Some((lo, hi)) => {
                    if k == 7 {
                        hi
                    } else {
                        lo
                    }
                }
            })
            .collect();
        spec = spec.array(
            ArraySpec::new("t2m", ArrayD::from_shape_vec(IxDyn(&[8]), values).unwrap())
                .fill(FillValue::Float(f64::from(FILL))),
        );
    }
    spec.array(ArraySpec::new(
        "count",
        ArrayD::from_shape_vec(IxDyn(&[2]), vec![i as i64, 0]).unwrap(),
    ))
}

fn names(atlas: &Atlas, ordinals: &[u32]) -> Vec<String> {
    ordinals
        .iter()
        .map(|&o| atlas.footer().datasets.name(o as usize).unwrap().to_owned())
        .collect()
}

fn expected(deleted: &[usize], keep: impl Fn(&Written) -> bool) -> Vec<String> {
    (0..DATASETS)
        .filter(|i| !deleted.contains(i) && keep(&written(*i)))
        .map(|i| format!("station_{i:05}"))
        .collect()
}

async fn counted() -> (Atlas, CountingStore) {
    let store = write((0..DATASETS).map(dataset)).await;
    let counting = CountingStore::new(store);
    let atlas = Atlas::open(Arc::new(counting.clone()), &prefix())
        .await
        .unwrap();
    (atlas, counting)
}

#[tokio::test]
async fn attribute_and_statistic_conditions_match_a_brute_force_evaluation() {
    let (atlas, counting) = counted().await;
    let deleted = [3usize, 7, 400, 1_999];
    let deleted_names: Vec<String> = deleted.iter().map(|i| format!("station_{i:05}")).collect();
    atlas.delete(&deleted_names).await.unwrap();

    counting.reset();
    let selection = Selection::new()
        .attr_in(
            "member",
            vec![
                SelectValue::Int(1),
                SelectValue::Int(2),
                SelectValue::Int(3),
            ],
        )
        .stat("t2m", Stat::Max, Comparison::Gt, SelectValue::Float(300.0));
    let got = atlas.select(&selection).await.unwrap();
    assert_eq!(
        counting.count(),
        2,
        "one request for _datasets, one for t2m: {:?}",
        counting.requests()
    );
    let want = expected(&deleted, |w| {
        [1, 2, 3].contains(&w.member) && matches!(w.t2m, Some(Some((_, hi))) if hi > 300.0)
    });
    assert!(!want.is_empty());
    assert_eq!(names(&atlas, &got), want);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "collection order");

    // The segments stay open: the same or another condition on them costs nothing.
    counting.reset();
    let again = atlas.select(&selection).await.unwrap();
    assert_eq!(again, got);
    let other = Selection::new()
        .attr_in("region", vec![SelectValue::String("south".into())])
        .stat("t2m", Stat::Min, Comparison::Le, SelectValue::Int(260))
        .stat("t2m", Stat::NullCount, Comparison::Eq, SelectValue::Int(0));
    let got = atlas.select(&other).await.unwrap();
    assert_eq!(counting.count(), 0, "{:?}", counting.requests());
    let want = expected(&deleted, |w| {
        w.region == "south"
            && matches!(w.t2m, Some(Some((lo, _))) if lo <= 260.0)
            && w.t2m_nulls == 0
    });
    assert!(!want.is_empty());
    assert_eq!(names(&atlas, &got), want);
    assert_eq!(atlas.select_names(&other).await.unwrap(), want);
}

#[tokio::test]
async fn absent_attributes_arrays_and_statistics_never_match() {
    let (atlas, _) = counted().await;
    let flagged = Selection::new().attr_in("flag", vec![SelectValue::Bool(true)]);
    let got = atlas.select(&flagged).await.unwrap();
    assert_eq!(names(&atlas, &got), expected(&[], |w| w.flag == Some(true)));
    // `!=` holds for no dataset lacking the array or its min: absent is not "different".
    let not = Selection::new().stat("t2m", Stat::Min, Comparison::Ne, SelectValue::Float(-1.0));
    let got = atlas.select(&not).await.unwrap();
    assert_eq!(
        names(&atlas, &got),
        expected(&[], |w| matches!(w.t2m, Some(Some(_))))
    );
    // All-fill datasets do have a null count.
    let nulls = Selection::new().stat("t2m", Stat::NullCount, Comparison::Ge, SelectValue::Int(8));
    let got = atlas.select(&nulls).await.unwrap();
    assert_eq!(
        names(&atlas, &got),
        expected(&[], |w| w.t2m.is_some() && w.t2m_nulls >= 8)
    );
    // No conditions: every live dataset, without a request.
    assert_eq!(
        atlas.select(&Selection::new()).await.unwrap().len(),
        DATASETS
    );
    // No accepted value: nothing.
    let none = Selection::new().attr_in("member", vec![]);
    assert!(atlas.select(&none).await.unwrap().is_empty());
}

#[tokio::test]
async fn integer_attributes_of_any_width_match_by_value() {
    let (atlas, _) = counted().await;
    let by_station = Selection::new().attr_in(
        "station",
        vec![
            SelectValue::Int(5),
            SelectValue::Float(6.0),
            SelectValue::Float(7.5),
        ],
    );
    let got = atlas.select(&by_station).await.unwrap();
    assert_eq!(names(&atlas, &got), ["station_00005", "station_00006"]);
    let stat = Selection::new().stat(
        "count",
        Stat::Max,
        Comparison::Ge,
        SelectValue::Float(1998.5),
    );
    let got = atlas.select(&stat).await.unwrap();
    assert_eq!(names(&atlas, &got), ["station_01999"]);
}

#[tokio::test]
async fn malformed_selections_are_refused_naming_the_condition_before_any_request() {
    let (atlas, counting) = counted().await;
    counting.reset();
    let cases: Vec<(Selection, &str, &str)> = vec![
        (
            Selection::new().attr_in("membr", vec![SelectValue::Int(1)]),
            "attrs[\"membr\"]",
            "no dataset declares an attribute \"membr\"",
        ),
        (
            Selection::new().stat("t2", Stat::Max, Comparison::Gt, SelectValue::Int(1)),
            "where[0] (\"t2\" max >)",
            "no dataset declares an array named \"t2\"",
        ),
        (
            Selection::new().stat("_datasets", Stat::Max, Comparison::Gt, SelectValue::Int(1)),
            "where[0] (\"_datasets\" max >)",
            "no dataset declares an array named \"_datasets\"",
        ),
        (
            Selection::new().attr_in("member", vec![SelectValue::String("1".into())]),
            "attrs[\"member\"]",
            "the string \"1\" cannot equal attribute \"member\", declared Int32",
        ),
        (
            Selection::new().attr_in("flag", vec![SelectValue::Int(1)]),
            "attrs[\"flag\"]",
            "the integer 1 cannot equal attribute \"flag\", declared Bool",
        ),
        (
            Selection::new().stat(
                "t2m",
                Stat::Max,
                Comparison::Gt,
                SelectValue::String("x".into()),
            ),
            "where[0] (\"t2m\" max >)",
            "the string \"x\" cannot compare with the max of array \"t2m\", declared Float32",
        ),
        (
            Selection::new().stat(
                "t2m",
                Stat::Max,
                Comparison::Gt,
                SelectValue::Float(f64::NAN),
            ),
            "where[0] (\"t2m\" max >)",
            "NaN compares with nothing; select datasets by their null_count instead",
        ),
    ];
    for (selection, condition, reason) in cases {
        let error = atlas.select(&selection).await.unwrap_err();
        assert!(
            matches!(error, AtlasError::InvalidQuery { .. }),
            "{error:?}"
        );
        assert_eq!(error.field(), Some(condition), "{error}");
        assert_eq!(error.reason(), reason, "{error}");
        assert!(!error.is_retryable());
    }
    let error = Selection::new()
        .stat_named("t2m", "mean", ">", SelectValue::Int(1))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "select: where[0]: unknown statistic \"mean\" (expected one of min, max, null_count)"
    );
    assert_eq!(counting.count(), 0, "{:?}", counting.requests());
}

#[tokio::test]
async fn a_selection_fetches_a_segments_footer_not_its_data() {
    // A year of daily values: the `t2m` segment is about 2.9 MB, which a data read fetches
    // whole; a selection needs its footer alone.
    // Noise in every mantissa bit (a xorshift), so the segment does not compress away.
    let year = |i: usize| -> Vec<f32> {
        let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (0..365)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                250.0 + (x >> 40) as f32 / (1u64 << 24) as f32 * 100.0
            })
            .collect()
    };
    let store = write((0..DATASETS).map(|i| {
        DatasetSpec::new(format!("station_{i:05}"))
            .attr("member", Attr::Int64((i % 50) as i64))
            .array(ArraySpec::new(
                "t2m",
                ArrayD::from_shape_vec(IxDyn(&[365]), year(i)).unwrap(),
            ))
    }))
    .await;
    let counting = CountingStore::new(store);
    let atlas = Atlas::open(Arc::new(counting.clone()), &prefix())
        .await
        .unwrap();
    let (_, entry) = atlas.variables().find(|(n, _)| *n == "t2m").unwrap();
    assert!(entry.seg_len > 2 << 20, "{}", entry.seg_len);
    counting.reset();
    let selection = Selection::new()
        .attr_in("member", vec![SelectValue::Int(7)])
        .stat("t2m", Stat::Max, Comparison::Gt, SelectValue::Float(349.0));
    let got = atlas.select(&selection).await.unwrap();
    let want: Vec<String> = (0..DATASETS)
        .filter(|&i| i % 50 == 7 && year(i).iter().any(|&v| v > 349.0))
        .map(|i| format!("station_{i:05}"))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(names(&atlas, &got), want);
    assert_eq!(counting.count(), 2, "{:?}", counting.requests());
    // `_datasets` is smaller than its tail window, so its one read was the whole segment, kept;
    // `t2m` was read for its footer and keeps none of its bytes.
    let (_, datasets) = atlas.variables().find(|(n, _)| *n == "_datasets").unwrap();
    assert!(datasets.seg_len < 1 << 20);
    assert_eq!(atlas.resident_segment_bytes(), datasets.seg_len);
    // The data reads as before, from the segment select opened.
    let read = atlas
        .dataset("station_00007")
        .unwrap()
        .read_array::<f32>("t2m", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(read.iter().copied().collect::<Vec<_>>(), year(7));
}
