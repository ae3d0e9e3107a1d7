//! Megatron-LM indexed datasets (the MMIDIDX layout, written here byte for byte as
//! megatron-core's `IndexedDatasetBuilder` does) into token caches: documents made of several
//! sequences, empty documents, every element type; and hostile headers, counts, lengths and
//! pointers refused as typed errors naming the file or the document, before any allocation
//! they would size. (The Python suite checks files written by megatron-core itself.)
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)] // Test code.

use dsrt_atlas_test_runner::files_below;
use dsrt_pack::{pack, Megatron, PackError, PackOptions};
use dsrt_reader::OpenOptions;
use dsrt_tokens::{TokenBuf, TokenCache, TokenDtype, TokenInfo};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::Path;

/// The index and data of `documents` (each a list of sequences), elements of dtype `code`.
fn megatron_files(documents: &[Vec<Vec<i64>>], code: u8) -> (Vec<u8>, Vec<u8>) {
    let size = match code {
        1 | 2 => 1,
        3 | 8 => 2,
        4 => 4,
        _ => 8,
    };
    let (mut bin, mut lengths, mut pointers, mut doc_idx) =
        (Vec::new(), Vec::new(), Vec::new(), vec![0i64]);
    for document in documents {
        for sequence in document {
            pointers.push(bin.len() as i64);
            lengths.push(sequence.len() as i32);
            for &v in sequence {
                bin.extend_from_slice(&v.to_le_bytes()[..size]);
            }
        }
        doc_idx.push(lengths.len() as i64);
    }
    let mut idx = b"MMIDIDX\x00\x00".to_vec();
    idx.extend_from_slice(&1u64.to_le_bytes());
    idx.push(code);
    idx.extend_from_slice(&(lengths.len() as u64).to_le_bytes());
    idx.extend_from_slice(&(doc_idx.len() as u64).to_le_bytes());
    lengths
        .iter()
        .for_each(|l| idx.extend_from_slice(&l.to_le_bytes()));
    pointers
        .iter()
        .for_each(|p| idx.extend_from_slice(&p.to_le_bytes()));
    doc_idx
        .iter()
        .for_each(|d| idx.extend_from_slice(&d.to_le_bytes()));
    (idx, bin)
}

fn write(prefix: &Path, files: &(Vec<u8>, Vec<u8>)) {
    std::fs::write(prefix.with_extension("idx"), &files.0).unwrap();
    std::fs::write(prefix.with_extension("bin"), &files.1).unwrap();
}

fn pack_to(megatron: &Megatron, out: &Path, jobs: usize) -> Result<(), PackError> {
    let mut options =
        WriterOptions::new("megatron", megatron.schema().clone()).max_shard_bytes(8 << 10);
    for (key, value) in dsrt_pack::Convert::manifest_keys(megatron) {
        options = options.manifest_key(key, value);
    }
    let mut writer = CacheWriter::create(out, options).unwrap();
    pack(megatron, &mut writer, &PackOptions::default().jobs(jobs))?;
    writer.finish().unwrap();
    Ok(())
}

fn corpus(n: usize) -> Vec<Vec<Vec<i64>>> {
    (0..n)
        .map(|d| {
            (0..d % 4)
                .map(|s| {
                    (0..(d * 13 + s * 7) % 50 + 1)
                        .map(|t| ((d * 997 + s * 31 + t) % 30_000) as i64)
                        .collect()
                })
                .collect()
        })
        .collect()
}

#[test]
fn documents_of_several_sequences_become_one_sample_each_with_identical_tokens() {
    let root = tempfile::tempdir().unwrap();
    let documents = corpus(1500);
    for code in [4u8, 8, 5] {
        let prefix = root.path().join(format!("data{code}_text_document"));
        write(&prefix, &megatron_files(&documents, code));
        let megatron = Megatron::open(&prefix, None).unwrap();
        assert_eq!(megatron.documents(), 1500);
        let expected_dtype = if code == 8 {
            TokenDtype::U16
        } else {
            TokenDtype::U32
        };
        assert_eq!(megatron.token_info(), &TokenInfo::new(expected_dtype));
        let (one, two) = (
            root.path().join(format!("c{code}-1")),
            root.path().join(format!("c{code}-2")),
        );
        pack_to(&megatron, &one, 1).unwrap();
        pack_to(&megatron, &two, 2).unwrap();
        assert_eq!(files_below(&one), files_below(&two));
        let cache = TokenCache::open(&one, OpenOptions::validated()).unwrap();
        let mut buf = TokenBuf::new();
        for (d, document) in documents.iter().enumerate() {
            let expected: Vec<u32> = document.iter().flatten().map(|&v| v as u32).collect();
            let tokens: Vec<u32> = cache.read(d as u64, &mut buf).unwrap().iter().collect();
            assert_eq!(tokens, expected, "document {d}");
        }
    }
}

#[test]
fn hostile_indexes_are_typed_errors_naming_the_file_or_document() {
    let root = tempfile::tempdir().unwrap();
    let good = megatron_files(&corpus(20), 4);
    let prefix = root.path().join("x");
    let u64_field =
        |idx: &mut Vec<u8>, at: usize, v: u64| idx[at..at + 8].copy_from_slice(&v.to_le_bytes());
    let sequences = u64::from_le_bytes(good.0[18..26].try_into().unwrap()) as usize;
    let lengths_at = 34;
    let pointers_at = 34 + 4 * sequences;
    let docs_at = 34 + 12 * sequences;
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "magic",
            Box::new(|i: &mut Vec<u8>| i[0] = b'X'),
            "not a Megatron-LM indexed dataset",
        ),
        (
            "version",
            Box::new(move |i: &mut Vec<u8>| u64_field(i, 9, 2)),
            "version 2",
        ),
        (
            "float",
            Box::new(|i: &mut Vec<u8>| i[17] = 6),
            "floating-point",
        ),
        (
            "unknown dtype",
            Box::new(|i: &mut Vec<u8>| i[17] = 9),
            "unknown dtype code 9",
        ),
        (
            "huge count",
            Box::new(move |i: &mut Vec<u8>| u64_field(i, 18, 1 << 60)),
            "header counts",
        ),
        (
            "overflowing count",
            Box::new(move |i: &mut Vec<u8>| u64_field(i, 26, u64::MAX)),
            "header counts",
        ),
        (
            "truncated",
            Box::new(|i: &mut Vec<u8>| {
                i.pop();
            }),
            "header counts",
        ),
        (
            "short",
            Box::new(|i: &mut Vec<u8>| i.truncate(20)),
            "shorter than",
        ),
        (
            "trailing sequences",
            Box::new(move |i: &mut Vec<u8>| {
                let at = i.len() - 8;
                i[at..].copy_from_slice(&((sequences - 2) as i64).to_le_bytes());
            }),
            "belong to no document",
        ),
        (
            "first index",
            Box::new(move |i: &mut Vec<u8>| {
                i[docs_at..docs_at + 8].copy_from_slice(&3i64.to_le_bytes())
            }),
            "not 0",
        ),
    ];
    for (name, edit, text) in cases {
        let mut idx = good.0.clone();
        edit(&mut idx);
        write(&prefix, &(idx, good.1.clone()));
        let err = Megatron::open(&prefix, None).unwrap_err();
        assert!(matches!(err, PackError::Input { .. }), "{name}: {err}");
        assert!(
            err.to_string().contains("x.idx") && err.to_string().contains(text),
            "{name}: {err}"
        );
    }
    // Past the header checks: a bad document is refused when its unit is converted.
    let document_cases: Vec<(&str, Edit, &str)> = vec![
        (
            "pointer",
            Box::new(move |i: &mut Vec<u8>| {
                i[pointers_at + 8..pointers_at + 16].copy_from_slice(&(1i64 << 40).to_le_bytes())
            }),
            "lie outside",
        ),
        (
            "negative length",
            Box::new(move |i: &mut Vec<u8>| {
                i[lengths_at + 4..lengths_at + 8].copy_from_slice(&(-5i32).to_le_bytes())
            }),
            "-5 elements",
        ),
        (
            "huge length",
            Box::new(move |i: &mut Vec<u8>| {
                i[lengths_at..lengths_at + 4].copy_from_slice(&i32::MAX.to_le_bytes())
            }),
            "lie outside",
        ),
        (
            "backwards",
            Box::new(move |i: &mut Vec<u8>| {
                i[docs_at + 24..docs_at + 32].copy_from_slice(&0i64.to_le_bytes())
            }),
            "not a range",
        ),
    ];
    for (name, edit, text) in document_cases {
        let mut idx = good.0.clone();
        edit(&mut idx);
        write(&prefix, &(idx, good.1.clone()));
        let megatron = Megatron::open(&prefix, None).unwrap();
        let out = root.path().join(format!("out-{}", name.replace(' ', "-")));
        let err = pack_to(&megatron, &out, 2).unwrap_err();
        assert!(
            err.to_string().contains("x.idx document") && err.to_string().contains(text),
            "{name}: {err}"
        );
    }
    // Ids that do not fit the width asked for.
    write(&prefix, &megatron_files(&[vec![vec![1, 70_000]]], 4));
    let megatron = Megatron::open(&prefix, Some(TokenInfo::new(TokenDtype::U16))).unwrap();
    let err = pack_to(&megatron, &root.path().join("narrow"), 1).unwrap_err();
    assert!(
        matches!(err, PackError::TokenOutOfRange { position: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("x.idx document 0"), "{err}");
    write(&prefix, &megatron_files(&[vec![vec![1, -3]]], 5));
    let err = pack_to(
        &Megatron::open(&prefix, None).unwrap(),
        &root.path().join("neg"),
        1,
    )
    .unwrap_err();
    assert!(err.to_string().contains("token 1 is -3"), "{err}");
}
