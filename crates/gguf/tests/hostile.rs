//! Hostile and broken files: each is an error naming what is wrong, never a panic, a hang or
//! an allocation the file does not justify.

use std::sync::Arc;

use proptest::prelude::*;
use sieve_gguf::{Error, GgmlType, GgufFile, Storage, Value, Writer};

fn parse(bytes: &[u8]) -> Result<GgufFile, Error> {
    let storage: Storage = Arc::new(bytes.to_vec());
    GgufFile::from_storage("bad.gguf", storage)
}

fn message(bytes: &[u8]) -> String {
    let e = parse(bytes).expect_err("must be refused");
    let text = e.to_string();
    assert!(text.starts_with("bad.gguf"), "{text}");
    text
}

/// A small valid file: two metadata pairs, two tensors.
fn valid() -> Vec<u8> {
    let mut w = Writer::new();
    w.metadata("general.architecture", Value::String("llama".into()));
    w.metadata("tokenizer.ggml.tokens", Value::strings(["a", "b"]));
    w.tensor("t0", GgmlType::F32, &[2, 2], vec![0u8; 16])
        .unwrap();
    w.tensor("t1", GgmlType::Q4_0, &[32], vec![0u8; 18])
        .unwrap();
    w.to_bytes().unwrap()
}

/// Header bytes by hand: magic, version, counts.
fn header(version: u32, tensors: u64, kvs: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&tensors.to_le_bytes());
    b.extend_from_slice(&kvs.to_le_bytes());
    b
}

fn string(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

#[test]
fn the_valid_file_parses() {
    let f = parse(&valid()).unwrap();
    assert_eq!(f.tensors().len(), 2);
}

#[test]
fn truncated_at_every_byte_is_an_error() {
    let bytes = valid();
    let last_tensor_end = {
        let f = parse(&bytes).unwrap();
        f.tensors()
            .iter()
            .map(|t| t.file_offset + t.size)
            .max()
            .unwrap() as usize
    };
    for len in 0..last_tensor_end {
        assert!(
            parse(&bytes[..len]).is_err(),
            "truncated to {len} bytes parsed"
        );
    }
}

#[test]
fn bad_magic_and_versions() {
    assert!(message(b"GGML\x03\0\0\0").contains("not a GGUF file"));
    assert!(message(b"GG").contains("not a GGUF file"));
    assert!(message(&header(1, 0, 0)).contains("version 1"));
    assert!(message(&header(4, 0, 0)).contains("version 4"));
    assert!(message(&header(3u32.swap_bytes(), 0, 0)).contains("big-endian"));
    assert!(parse(&header(2, 0, 0)).is_ok());
}

#[test]
fn huge_counts_fail_as_past_the_end() {
    let e = message(&header(3, 1 << 60, 0));
    assert!(
        e.contains("tensor count") && e.contains("past the end"),
        "{e}"
    );
    let e = message(&header(3, 0, 1 << 60));
    assert!(
        e.contains("metadata count") && e.contains("past the end"),
        "{e}"
    );
    let e = message(&header(3, u64::MAX, u64::MAX));
    assert!(e.contains("past the end"), "{e}");
    // An array of 2^60 strings.
    let mut b = header(3, 0, 1);
    string(&mut b, "k");
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&(1u64 << 60).to_le_bytes());
    let e = message(&b);
    assert!(
        e.contains("`k`") && e.contains("count 1152921504606846976"),
        "{e}"
    );
}

#[test]
fn string_lengths_past_the_end() {
    let mut b = header(3, 0, 1);
    b.extend_from_slice(&(1u64 << 62).to_le_bytes());
    b.extend_from_slice(&[0u8; 64]);
    let e = message(&b);
    assert!(
        e.contains("metadata key 0") && e.contains("string length"),
        "{e}"
    );
    let mut b = header(3, 0, 1);
    string(&mut b, "general.name");
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&[0u8; 64]);
    let e = message(&b);
    assert!(
        e.contains("`general.name`") && e.contains("string length"),
        "{e}"
    );
}

#[test]
fn bad_value_types_and_deep_nesting() {
    let mut b = header(3, 0, 1);
    string(&mut b, "k");
    b.extend_from_slice(&13u32.to_le_bytes());
    assert!(message(&b).contains("unknown value type 13"));
    let mut b = header(3, 0, 1);
    string(&mut b, "k");
    b.extend_from_slice(&7u32.to_le_bytes());
    b.push(2);
    assert!(message(&b).contains("bool byte 2"));
    let mut b = header(3, 0, 1);
    string(&mut b, "k");
    b.extend_from_slice(&9u32.to_le_bytes());
    for _ in 0..100 {
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
    }
    assert!(message(&b).contains("nested"));
}

/// A file with one tensor whose info fields are given.
fn one_tensor(dims: &[u64], ty: u32, offset: u64, data: usize) -> Vec<u8> {
    let mut b = header(3, 1, 0);
    string(&mut b, "w");
    b.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        b.extend_from_slice(&d.to_le_bytes());
    }
    b.extend_from_slice(&ty.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b.resize(b.len().next_multiple_of(32) + data, 0);
    b
}

#[test]
fn bad_tensor_infos() {
    assert!(parse(&one_tensor(&[4], 0, 0, 16)).is_ok());
    let e = message(&one_tensor(&[4], 0, 32, 16));
    assert!(
        e.contains("tensor `w`") && e.contains("past the end"),
        "{e}"
    );
    let e = message(&one_tensor(&[4], 0, u64::MAX - 7, 16));
    assert!(e.contains("past the end") || e.contains("alignment"), "{e}");
    let e = message(&one_tensor(&[4], 0, 8, 64));
    assert!(e.contains("not a multiple of the alignment"), "{e}");
    let e = message(&one_tensor(&[4], 31, 0, 64));
    assert!(e.contains("unknown tensor type id 31"), "{e}");
    let e = message(&one_tensor(&[33], 2, 0, 64));
    assert!(e.contains("not a multiple of Q4_0's block"), "{e}");
    let e = message(&one_tensor(&[1 << 32, 1 << 32, 1 << 32], 0, 0, 64));
    assert!(e.contains("overflow"), "{e}");
    let e = message(&one_tensor(&[], 0, 0, 64));
    assert!(e.contains("0 dimensions"), "{e}");
    let e = message(&one_tensor(&[1, 1, 1, 1, 1], 0, 0, 64));
    assert!(e.contains("5 dimensions"), "{e}");
}

#[test]
fn overlapping_and_duplicate_tensors() {
    let mut b = header(3, 2, 0);
    for name in ["a", "b"] {
        string(&mut b, name);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&16u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
    }
    b.resize(b.len().next_multiple_of(32) + 64, 0);
    let e = message(&b);
    assert!(e.contains("overlaps"), "{e}");
    let mut b = header(3, 2, 0);
    for offset in [0u64, 64] {
        string(&mut b, "a");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&16u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&offset.to_le_bytes());
    }
    b.resize(b.len().next_multiple_of(32) + 128, 0);
    assert!(message(&b).contains("twice"));
}

#[test]
fn a_bad_alignment_is_named() {
    let mut b = header(3, 0, 1);
    string(&mut b, "general.alignment");
    b.extend_from_slice(&4u32.to_le_bytes());
    b.extend_from_slice(&24u32.to_le_bytes());
    let e = message(&b);
    assert!(
        e.contains("general.alignment") && e.contains("power of two"),
        "{e}"
    );
}

#[test]
fn a_directory_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = GgufFile::open(dir.path()).unwrap_err();
    assert!(matches!(e, Error::NotRegularFile { .. }), "{e}");
    let e = GgufFile::open(dir.path().join("absent.gguf")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any bytes changed anywhere in a valid file: parsing returns (Ok or an error) without
    /// panicking, and whatever parses has every tensor inside the file.
    #[test]
    fn mutated_files_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = valid();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(f) = parse(&bytes) {
            for t in f.tensors() {
                prop_assert!(t.file_offset + t.size <= bytes.len() as u64);
                prop_assert_eq!(f.tensor_bytes(t).len() as u64, t.size);
            }
        }
    }

    /// Random 8-byte words written over the counts, lengths and offsets of a valid file.
    #[test]
    fn random_words_over_the_header_never_panic(
        at in 0usize..200,
        word in prop_oneof![any::<u64>(), Just(1u64 << 60), Just(u64::MAX), 0u64..100],
    ) {
        let mut bytes = valid();
        let at = at.min(bytes.len() - 8);
        bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
        let _ = parse(&bytes);
    }
}
