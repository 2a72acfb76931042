//! Writer → reader round trips: every value type, nested arrays, alignment, tensors of plain
//! and block types, split models.

use std::sync::Arc;

use sieve_gguf::{
    GgmlType, GgufFile, GgufModel, Storage, Value, ValueType, Writer, SPLIT_COUNT, SPLIT_NO,
    SPLIT_TENSORS_COUNT,
};

fn every_value() -> Vec<(&'static str, Value)> {
    vec![
        ("u8", Value::U8(200)),
        ("i8", Value::I8(-5)),
        ("u16", Value::U16(65535)),
        ("i16", Value::I16(-300)),
        ("u32", Value::U32(7)),
        ("i32", Value::I32(-7)),
        ("u64", Value::U64(1 << 40)),
        ("i64", Value::I64(-(1 << 40))),
        ("f32", Value::F32(0.25)),
        ("f64", Value::F64(-1e300)),
        ("bool", Value::Bool(true)),
        ("string", Value::String("héllo".into())),
        ("strings", Value::strings(["a", "", "ü"])),
        ("floats", Value::f32s([1.0, -2.5])),
        (
            "nested",
            Value::Array(
                ValueType::Array,
                vec![
                    Value::i32s([1, 2]),
                    Value::Array(ValueType::I32, Vec::new()),
                ],
            ),
        ),
    ]
}

fn parse(bytes: Vec<u8>) -> GgufFile {
    let storage: Storage = Arc::new(bytes);
    GgufFile::from_storage("t.gguf", storage).unwrap()
}

#[test]
fn every_value_type_and_tensor_comes_back() {
    let mut w = Writer::new();
    for (k, v) in every_value() {
        w.metadata(k, v);
    }
    let f32s: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let q8: Vec<u8> = (0..2 * 34).map(|i| i as u8).collect();
    w.tensor("a", GgmlType::F32, &[3, 2], f32s.clone()).unwrap();
    w.tensor("b", GgmlType::Q8_0, &[32, 2], q8.clone()).unwrap();
    let file = parse(w.to_bytes().unwrap());
    assert_eq!(file.header().version, 3);
    let m = file.metadata();
    for (k, v) in every_value() {
        assert_eq!(m.get(k), Some(&v), "{k}");
    }
    assert_eq!(m.get_str_array("strings").unwrap().unwrap(), ["a", "", "ü"]);
    let a = file.tensor("a").unwrap();
    assert_eq!((a.dims.clone(), a.shape()), (vec![3, 2], vec![2, 3]));
    assert_eq!(file.tensor_bytes(a), f32s.as_slice());
    let b = file.tensor("b").unwrap();
    assert_eq!(b.ggml_type, GgmlType::Q8_0);
    assert_eq!(file.tensor_bytes(b), q8.as_slice());
    assert_eq!(b.offset % 32, 0);
    assert_eq!(b.file_offset % 32, 0);
}

/// A file's arrays are read in place by the typed accessors (no parse), with the same
/// answers and errors as parsed arrays; `get` and `entries` parse them.
#[test]
fn arrays_left_in_the_file_read_as_parsed_ones() {
    let mut w = Writer::new();
    w.metadata("strings", Value::strings(["x", "yz", ""]));
    w.metadata("f32", Value::f32s([0.5, -1.0]));
    w.metadata("f64", Value::Array(ValueType::F64, vec![Value::F64(2.5)]));
    w.metadata(
        "u64",
        Value::Array(ValueType::U64, vec![Value::U64(7), Value::U64(1 << 40)]),
    );
    w.metadata("i8", Value::Array(ValueType::I8, vec![Value::I8(-3)]));
    w.metadata("empty", Value::Array(ValueType::U16, Vec::new()));
    w.metadata(
        "nested",
        Value::Array(ValueType::Array, vec![Value::i32s([1])]),
    );
    let file = parse(w.to_bytes().unwrap());
    let m = file.metadata();
    assert!(m.contains("strings") && !m.contains("absent"));
    assert_eq!(
        m.get_str_array("strings").unwrap().unwrap(),
        ["x", "yz", ""]
    );
    assert_eq!(m.get_f32_array("f32").unwrap().unwrap(), [0.5, -1.0]);
    assert_eq!(m.get_f32_array("f64").unwrap().unwrap(), [2.5]);
    assert_eq!(m.get_i32_array("i8").unwrap().unwrap(), [-3]);
    assert_eq!(
        m.get_i32_array("empty").unwrap().unwrap(),
        Vec::<i32>::new()
    );
    assert_eq!(
        m.get_str_array("empty").unwrap().unwrap(),
        Vec::<&str>::new()
    );
    let e = m.get_i32_array("u64").unwrap_err().to_string();
    assert!(
        e.contains("element 1") && e.contains("does not fit i32"),
        "{e}"
    );
    for (key, wanted, found) in [
        ("strings", "get_i32_array", "array of string"),
        ("f32", "get_str_array", "array of f32"),
        ("nested", "get_f32_array", "array of array"),
        ("strings", "get_u32", "array of string"),
    ] {
        let e = match wanted {
            "get_i32_array" => m.get_i32_array(key).map(drop),
            "get_str_array" => m.get_str_array(key).map(drop),
            "get_f32_array" => m.get_f32_array(key).map(drop),
            _ => m.get_u32(key).map(drop),
        }
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("`{key}`")) && e.contains(found),
            "{key}: {e}"
        );
    }
    assert_eq!(m.get("strings"), Some(&Value::strings(["x", "yz", ""])));
    let nested = Value::Array(ValueType::Array, vec![Value::i32s([1])]);
    assert_eq!(m.entries().last(), Some(&("nested".to_string(), nested)));
    assert_eq!(m.len(), 7);
}

#[test]
fn a_custom_alignment_is_used_and_read() {
    let mut w = Writer::new();
    w.metadata("general.alignment", Value::U32(64));
    w.tensor("x", GgmlType::F16, &[3], vec![1u8; 6]).unwrap();
    w.tensor("y", GgmlType::BF16, &[5], vec![2u8; 10]).unwrap();
    let file = parse(w.to_bytes().unwrap());
    assert_eq!(file.header().alignment, 64);
    assert_eq!(file.header().data_offset % 64, 0);
    assert_eq!(file.tensor("y").unwrap().offset, 64);
    assert_eq!(file.tensor_bytes(file.tensor("y").unwrap()), [2u8; 10]);
    w.metadata("general.alignment", Value::U32(48));
    assert!(w.to_bytes().is_err());
}

#[test]
fn the_writer_refuses_inconsistent_tensors() {
    let mut w = Writer::new();
    assert!(w
        .tensor("a", GgmlType::Q4_K, &[100], vec![0u8; 144])
        .is_err());
    assert!(w.tensor("a", GgmlType::F32, &[2], vec![0u8; 7]).is_err());
    assert!(w.tensor("a", GgmlType::F32, &[], vec![]).is_err());
    w.tensor("a", GgmlType::F32, &[1], vec![0u8; 4]).unwrap();
    assert!(w.tensor("a", GgmlType::F32, &[1], vec![0u8; 4]).is_err());
}

#[test]
fn split_models_open_from_the_first_shard() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"];
    for (i, name) in names.iter().enumerate() {
        let mut w = Writer::new();
        if i == 0 {
            w.metadata("general.architecture", Value::String("llama".into()));
            w.metadata(SPLIT_TENSORS_COUNT, Value::I32(2));
        }
        w.metadata(SPLIT_NO, Value::U16(i as u16));
        w.metadata(SPLIT_COUNT, Value::U16(2));
        let bytes: Vec<u8> = (i as f32).to_le_bytes().to_vec();
        w.tensor(format!("t{i}"), GgmlType::F32, &[1], bytes)
            .unwrap();
        w.write_file(dir.path().join(name)).unwrap();
    }
    let model = GgufModel::open(dir.path().join(names[0])).unwrap();
    assert_eq!(model.shards().len(), 2);
    assert_eq!(
        model.metadata().get_str("general.architecture").unwrap(),
        Some("llama")
    );
    let (shard, t1) = model.tensor("t1").unwrap();
    assert_eq!(shard.tensor_bytes(t1), 1f32.to_le_bytes());
    assert!(shard.path().ends_with(names[1]));

    let e = GgufModel::open(dir.path().join(names[1]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("open the first one") && e.contains(names[0]),
        "{e}"
    );
    std::fs::remove_file(dir.path().join(names[1])).unwrap();
    let e = GgufModel::open(dir.path().join(names[0]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
}
