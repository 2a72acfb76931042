//! Quantizing at load (`WeightDtype::Quant`, the CLI's `--quantize TYPE`) and requantizing a
//! GGUF file (`quantize_gguf`, `sieve quantize`): both round with GGML's reference rounding,
//! so a fixture quantized at load gives bit for bit the logits of the same fixture exported as
//! a GGUF of that type and loaded, and of a float GGUF requantized; rows that are not whole
//! blocks fall back as `quant_type_for` says; the logits stay near the float model's.

mod common;

use std::path::{Path, PathBuf};

use common::fixture;
use sieve_backends::dtype::{quant_type_for, QuantType};
use sieve_backends::gguf::export::{file_type, quantize_gguf, write_gguf};
use sieve_backends::{BackendKind, ModelDir, WeightDtype};
use sieve_gguf::{GgmlType, GgufFile, GgufModel, Value};

fn ggml(t: QuantType) -> GgmlType {
    GgmlType::from_id(t.ggml_type()).unwrap()
}

/// The fixture `name` written as GGUF with matrices in `ty`, in `tmp`.
fn exported(tmp: &Path, name: &str, ty: GgmlType) -> PathBuf {
    let dir = ModelDir::open(fixture(name).dir).unwrap();
    let out = tmp.join(format!("{name}.{ty}.gguf"));
    write_gguf(&dir, &out, ty).unwrap();
    out
}

/// The GGUF `input` requantized into `ty`, in `tmp`.
fn requantized(tmp: &Path, input: &Path, ty: QuantType) -> PathBuf {
    let out = tmp.join(format!("requantized.{ty}.gguf"));
    quantize_gguf(&GgufModel::open(input).unwrap(), &out, ty).unwrap();
    out
}

fn logits(path: &Path, dtype: WeightDtype, tokens: &[u32]) -> Vec<Vec<f32>> {
    let dir = ModelDir::open(path).unwrap();
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    model.forward_all(tokens).unwrap()
}

fn assert_same_bits(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (row, (x, y)) in a.iter().zip(b).enumerate() {
        let same = x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
        assert!(same, "{what}: row {row} differs");
    }
}

#[test]
fn quantizing_at_load_equals_exporting_and_requantizing() {
    // llama-gqa-tied: GQA, tied embeddings, permuted q/k rows in GGUF, rows of 64 and 96
    // (K types fall back to their 32-block types); qwen2-bias: biases, rows of 32 and 64;
    // llama-f32-linear: rows of 48 in down_proj (no block type fits: they stay float).
    for (name, types) in [
        (
            "llama-gqa-tied",
            &[QuantType::Q8_0, QuantType::Q4K, QuantType::Q6K][..],
        ),
        ("qwen2-bias", &[QuantType::Q4_1, QuantType::Q5K]),
        ("llama-f32-linear", &[QuantType::Q8_0, QuantType::Q2K]),
    ] {
        let f = fixture(name);
        let tmp = tempfile::tempdir().unwrap();
        let float = exported(tmp.path(), name, GgmlType::F32);
        for &ty in types {
            let what = format!("{name} {ty}");
            let at_load = logits(&f.dir, WeightDtype::Quant(ty), &f.expected.tokens);
            let export = exported(tmp.path(), name, ggml(ty));
            let from_export = logits(&export, WeightDtype::Auto, &f.expected.tokens);
            assert_same_bits(&at_load, &from_export, &format!("{what}: exported"));
            // A float GGUF quantized at load, and requantized to a file.
            let float_at_load = logits(&float, WeightDtype::Quant(ty), &f.expected.tokens);
            assert_same_bits(&at_load, &float_at_load, &format!("{what}: float GGUF"));
            let requant = requantized(tmp.path(), &float, ty);
            let from_requant = logits(&requant, WeightDtype::Auto, &f.expected.tokens);
            assert_same_bits(&at_load, &from_requant, &format!("{what}: requantized"));
            // The requantized file holds the bytes of the exported one.
            let (a, b) = (
                GgufFile::open(&export).unwrap(),
                GgufFile::open(&requant).unwrap(),
            );
            for t in a.tensors() {
                let u = b.tensor(&t.name).unwrap();
                assert_eq!((t.ggml_type, &t.dims), (u.ggml_type, &u.dims), "{what}");
                assert_eq!(a.tensor_bytes(t), b.tensor_bytes(u), "{what}: {}", t.name);
            }
        }
    }
}

#[test]
fn matrices_take_the_type_or_its_fallback_and_vectors_stay_f32() {
    let tmp = tempfile::tempdir().unwrap();
    let float = exported(tmp.path(), "llama-f32-linear", GgmlType::F32);
    let out = requantized(tmp.path(), &float, QuantType::Q4K);
    let file = GgufFile::open(&out).unwrap();
    let mut quantized = 0;
    for t in file.tensors() {
        let expected = match t.dims.as_slice() {
            [k, _] => quant_type_for(QuantType::Q4K, *k as usize).map_or(GgmlType::F32, ggml),
            _ => GgmlType::F32,
        };
        assert_eq!(t.ggml_type, expected, "{} {:?}", t.name, t.dims);
        quantized += usize::from(expected != GgmlType::F32);
    }
    // Rows of 32 become Q5_0 (Q4_K's fallback); down_proj's rows of 48 stay F32.
    assert!(quantized > 0);
    assert_eq!(
        file.tensor("blk.0.ffn_down.weight").unwrap().ggml_type,
        GgmlType::F32
    );
    assert_eq!(
        file.tensor("blk.0.attn_q.weight").unwrap().ggml_type,
        GgmlType::Q5_0
    );
}

#[test]
fn requantizing_copies_every_key_and_sets_the_file_type() {
    let tmp = tempfile::tempdir().unwrap();
    let input = exported(tmp.path(), "qwen2-bias", GgmlType::BF16);
    let out = requantized(tmp.path(), &input, QuantType::Q8_0);
    let (a, b) = (
        GgufFile::open(&input).unwrap(),
        GgufFile::open(&out).unwrap(),
    );
    for (key, value) in a.metadata().entries() {
        if key == "general.file_type" {
            continue;
        }
        assert_eq!(b.metadata().get(key), Some(value), "{key}");
    }
    assert_eq!(b.metadata().get("general.file_type"), Some(&Value::U32(7)));
    assert_eq!(
        b.metadata().get("general.quantization_version"),
        Some(&Value::U32(2))
    );
    assert_eq!(file_type(QuantType::Q4K), 15);
    let names = |f: &GgufFile| {
        f.tensors()
            .iter()
            .map(|t| t.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&a), names(&b));
}

#[test]
fn a_quantized_gguf_requantizes_as_it_quantizes_at_load() {
    let f = fixture("qwen2-bias");
    let tmp = tempfile::tempdir().unwrap();
    let q8 = exported(tmp.path(), "qwen2-bias", GgmlType::Q8_0);
    let at_load = logits(&q8, WeightDtype::Quant(QuantType::Q4_0), &f.expected.tokens);
    let requant = requantized(tmp.path(), &q8, QuantType::Q4_0);
    let from_file = logits(&requant, WeightDtype::Auto, &f.expected.tokens);
    assert_same_bits(&at_load, &from_file, "q8_0 -> q4_0");
}

#[test]
fn quantized_at_load_stays_near_the_float_model() {
    // Tiny random fixtures (rows of 32 to 96 weights, logits up to |20|): rounding their
    // weights to 4–8 bits moves the logits by tenths to units. The results are the same bits
    // on every machine, so the bounds sit just above what was measured (--nocapture prints
    // it): [quantized vs float, dequantized weights vs float (the weights' rounding alone)].
    for (name, ty, bound) in [
        // Measured: [1.524, 1.423].
        ("llama-gqa-tied", QuantType::Q8_0, [1.8, 1.7]),
        // Measured: [0.328, 0.280] (what the Q8_0 GGUF export gives too: tests/gguf.rs).
        ("qwen2-bias", QuantType::Q8_0, [0.4, 0.34]),
        // Measured: [7.95, 7.93] (every row here is 64 or 96 long: Q4_K's fallback Q5_0).
        ("llama-gqa-tied", QuantType::Q4K, [9.5, 9.5]),
    ] {
        let f = fixture(name);
        let tmp = tempfile::tempdir().unwrap();
        let float = logits(&f.dir, WeightDtype::F32, &f.expected.tokens);
        let q = logits(&f.dir, WeightDtype::Quant(ty), &f.expected.tokens);
        let export = exported(tmp.path(), name, ggml(ty));
        let dequantized = logits(&export, WeightDtype::F32, &f.expected.tokens);
        let worst = |a: &[Vec<f32>]| {
            a.iter()
                .zip(&float)
                .map(|(a, b)| common::max_abs_diff(a, b))
                .fold(0.0, f32::max)
        };
        let d = [worst(&q), worst(&dequantized)];
        println!("{name} {ty}: {d:?}");
        assert!(d[0] > 0.0, "{name} {ty}: the weights were not quantized");
        for (got, limit) in d.iter().zip(bound) {
            assert!(*got < limit, "{name} {ty}: {d:?} against {bound:?}");
        }
    }
}

/// `tests/fixtures/gguf/<model>/<file>`: files llama.cpp made (`tools/make_gguf_fixtures.py`:
/// `convert_hf_to_gguf.py`, then `llama-quantize --pure`).
fn llamacpp_file(model: &str, file: &str) -> PathBuf {
    let models = common::fixture_dir("llama-gqa-tied");
    let fixtures = models.parent().unwrap().parent().unwrap();
    fixtures.join("gguf").join(model).join(file)
}

#[test]
fn requantizing_llama_cpp_s_float_file_makes_its_choices() {
    // llama-quantize --pure made these files from an F32 GGUF that is not kept (so their
    // bytes are not those of the F16/BF16 file requantized): every tensor has the type and
    // dims llama.cpp gave it, and every metadata key (general.file_type among them) is equal.
    let tmp = tempfile::tempdir().unwrap();
    let mut cases: Vec<(&str, &str, QuantType)> = vec![("qwen2", "BF16", QuantType::Q4_0)];
    for t in QuantType::ALL {
        cases.push(("llama", "F16", t));
    }
    for (model, float, ty) in cases {
        let input = llamacpp_file(model, &format!("{model}-{float}.gguf"));
        let name = ty.name().to_uppercase();
        let theirs = GgufFile::open(llamacpp_file(model, &format!("{model}-{name}.gguf"))).unwrap();
        let ours = GgufFile::open(requantized(tmp.path(), &input, ty)).unwrap();
        let what = format!("{model} {ty}");
        assert_eq!(ours.tensors().len(), theirs.tensors().len(), "{what}");
        for t in theirs.tensors() {
            let u = ours.tensor(&t.name).unwrap();
            assert_eq!(
                (u.ggml_type, &u.dims),
                (t.ggml_type, &t.dims),
                "{what}: {}",
                t.name
            );
        }
        for (key, value) in theirs.metadata().entries() {
            assert_eq!(ours.metadata().get(key), Some(value), "{what}: {key}");
        }
    }
}
