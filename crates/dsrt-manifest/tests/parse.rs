//! Manifest parsing against hand-written JSON, as another implementation would write it.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_manifest::{
    cache_id_for_source, CacheDescription, CompressionAlgo, Manifest, ManifestError, ManifestV3,
    ShardEntry,
};
use dsrt_schema::{Column, ColumnType, Schema};
use proptest::prelude::*;

const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn v2_json(extra: &str) -> String {
    format!(
        r#"{{"format_version": 2, {extra} "source": "s", "sample_count": 1,
  "metadata_schema": [{{"name": "label", "type": "int64", "nullable": false}}],
  "index_sha256": "{HEX}", "metadata_sha256": "{HEX}", "unknown": {{"kept": [1, 2]}},
  "shards": [{{"name": "000000.bin", "uncompressed_byte_len": 20, "byte_len": 20,
     "compression": {{"algo": "none", "ratio": 1.0}}, "sha256": "{HEX}", "note": "x"}}]}}"#
    )
}

#[test]
fn parses_v2_ignoring_unknown_keys() {
    let manifest = Manifest::parse(v2_json("").as_bytes()).unwrap();
    assert_eq!(manifest.format_version(), 2);
    assert_eq!(manifest.stored_cache_id(), None);
    let d = manifest.description();
    assert_eq!(d.sample_count, 1);
    assert_eq!(d.shards[0].byte_len, 20);
    assert_eq!(d.metadata_schema.columns()[0].ty, ColumnType::Int64);
}

#[test]
fn v2_with_cache_id_is_malformed() {
    let err = Manifest::parse(v2_json(r#""cache_id": 5,"#).as_bytes()).unwrap_err();
    assert!(matches!(err, ManifestError::CacheIdInV2), "{err}");
}

#[test]
fn v3_requires_cache_id_and_accepts_u64_max() {
    let v3 = v2_json("").replace(r#""format_version": 2"#, r#""format_version": 3"#);
    assert!(matches!(
        Manifest::parse(v3.as_bytes()),
        Err(ManifestError::MissingCacheId)
    ));
    let with_id = v3.replace(
        r#""source""#,
        r#""cache_id": 18446744073709551615, "source""#,
    );
    assert_eq!(
        Manifest::parse(with_id.as_bytes())
            .unwrap()
            .stored_cache_id(),
        Some(u64::MAX)
    );
    let negative = v3.replace(r#""source""#, r#""cache_id": -1, "source""#);
    assert!(matches!(
        Manifest::parse(negative.as_bytes()),
        Err(ManifestError::Malformed(_))
    ));
}

#[test]
fn unsupported_versions_are_named() {
    for version in ["1", "4", "\"3\"", "3.0", "null"] {
        let json = v2_json("").replace(
            r#""format_version": 2"#,
            &format!(r#""format_version": {version}"#),
        );
        let err = Manifest::parse(json.as_bytes()).unwrap_err();
        assert!(
            matches!(err, ManifestError::UnsupportedVersion(_)),
            "{version}: {err}"
        );
    }
}

#[test]
fn refuses_malformed_fields() {
    let cases = [
        ("000000.bin", "../../etc/passwd"),
        (r#""index_sha256": "e3b0"#, r#""index_sha256": "E3B0"#),
        (r#""sample_count": 1"#, r#""sample_count": 1.5"#),
        (
            r#""sample_count": 1"#,
            r#""sample_count": 1, "sample_count": 2"#,
        ),
        (r#""type": "int64""#, r#""type": "int32""#),
        (
            r#""uncompressed_byte_len": 20"#,
            r#""uncompressed_byte_len": 21"#,
        ),
        (r#""source": "s","#, ""),
    ];
    for (from, to) in cases {
        let json = v2_json("").replacen(from, to, 1);
        assert_ne!(json, v2_json(""), "{from}");
        assert!(
            Manifest::parse(json.as_bytes()).is_err(),
            "{to} was accepted"
        );
    }
    assert!(Manifest::parse(b"").is_err());
    assert!(Manifest::parse(b"[]").is_err());
    assert!(Manifest::parse(b"\xff\xfe").is_err());
}

fn description(source: String, sample_count: u64, shard_lens: Vec<(u64, u64)>) -> CacheDescription {
    let shards = shard_lens
        .into_iter()
        .enumerate()
        .map(|(i, (u, b))| ShardEntry::new(i, CompressionAlgo::Lz4, u, b.max(1), HEX.to_owned()))
        .collect();
    CacheDescription {
        source,
        sample_count,
        metadata_schema: Schema::new(vec![Column::new("a", ColumnType::Utf8, true)]).unwrap(),
        index_sha256: HEX.to_owned(),
        metadata_sha256: HEX.to_owned(),
        shards,
        extra: Default::default(),
    }
}

#[test]
fn written_v3_has_the_pinned_key_order() {
    let manifest = ManifestV3 {
        cache_id: cache_id_for_source("s"),
        description: description("s".into(), 3, vec![(10, 5)]),
    };
    let text = String::from_utf8(manifest.to_json_bytes()).unwrap();
    let order: Vec<usize> = [
        "format_version",
        "cache_id",
        "source",
        "sample_count",
        "metadata_schema",
        "index_sha256",
        "metadata_sha256",
        "shards",
    ]
    .iter()
    .map(|k| text.find(&format!("\"{k}\"")).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains(r#""ratio": 2.0"#), "{text}");
    assert!(text.ends_with("}\n"));
}

proptest! {
    #[test]
    fn v3_round_trips(source in "\\PC{0,20}", cache_id in any::<u64>(), count in any::<u64>(),
                      lens in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5)) {
        let manifest = ManifestV3 { cache_id, description: description(source, count, lens) };
        let parsed = Manifest::parse(&manifest.to_json_bytes()).unwrap();
        prop_assert_eq!(parsed, Manifest::V3(manifest));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Manifest::parse(&bytes);
    }
}

#[test]
fn extra_top_level_keys_are_kept_and_written_after_the_standard_ones() {
    let manifest = Manifest::parse(v2_json("").as_bytes()).unwrap();
    assert_eq!(
        manifest.extra_key("unknown"),
        Some(&serde_json::json!({"kept": [1, 2]}))
    );
    assert_eq!(manifest.description().extra.len(), 1, "only unknown keys");
    let mut described = description("s".into(), 3, vec![(10, 5)]);
    described.extra.insert(
        "tokens".into(),
        serde_json::json!({"dtype": "uint16", "vocab_size": 50257}),
    );
    let written = ManifestV3 {
        cache_id: 7,
        description: described,
    };
    let text = String::from_utf8(written.to_json_bytes()).unwrap();
    assert!(
        text.find("\"tokens\"").unwrap() > text.find("\"shards\"").unwrap(),
        "{text}"
    );
    let parsed = Manifest::parse(text.as_bytes()).unwrap();
    assert_eq!(parsed, Manifest::V3(written));
    assert_eq!(parsed.extra_key("tokens").unwrap()["vocab_size"], 50257);
}

#[test]
fn a_repeated_key_is_malformed_also_among_extra_keys() {
    for extra in [r#""x": 1, "x": 2,"#, r#""source": "t","#] {
        let json = v2_json(extra);
        let err = Manifest::parse(json.as_bytes()).unwrap_err();
        assert!(
            matches!(err, ManifestError::Malformed(_)) && err.to_string().contains("duplicate"),
            "{extra}: {err}"
        );
    }
}
