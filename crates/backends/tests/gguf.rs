//! GGUF files as models: a fixture written as GGUF the way llama.cpp's converter lays it out
//! (q/k rows permuted for `llama`) gives the safetensors directory's logits bit for bit,
//! through `ModelDir::open(file).load(…)`, in F32, F16 and BF16; and a bad or unsupported file
//! is an error naming what is wrong.

mod common;

use std::path::{Path, PathBuf};

use common::fixture;
use sieve_backends::gguf::export::write_gguf;
use sieve_backends::{BackendKind, Error, ModelDir, WeightDtype};
use sieve_gguf::{GgmlType, GgufFile, Value, Writer};
use sieve_kernels::quant::QuantType;
use sieve_kernels::Weights;

/// The fixture `name` written as GGUF with matrices in `ty`, in a temporary directory.
fn exported(name: &str, ty: GgmlType) -> (tempfile::TempDir, PathBuf) {
    let dir = ModelDir::open(fixture(name).dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join(format!("{name}.gguf"));
    write_gguf(&dir, &out, ty).unwrap();
    (tmp, out)
}

fn logits(path: &Path, dtype: WeightDtype, tokens: &[u32]) -> Vec<Vec<f32>> {
    let dir = ModelDir::open(path).unwrap();
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    model.forward_all(tokens).unwrap()
}

/// The GGUF of `name` with matrices in `ty` gives the safetensors logits (its matrices in
/// `dtype`) bit for bit.
fn same_bits(name: &str, ty: GgmlType, dtype: WeightDtype) {
    let f = fixture(name);
    let (_tmp, file) = exported(name, ty);
    let from_gguf = logits(&file, WeightDtype::Auto, &f.expected.tokens);
    let from_safetensors = logits(&f.dir, dtype, &f.expected.tokens);
    assert_eq!(from_gguf.len(), f.expected.tokens.len());
    for (row, (g, s)) in from_gguf.iter().zip(&from_safetensors).enumerate() {
        let same = g.iter().zip(s).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name} {ty}: row {row} differs");
    }
}

#[test]
fn llama_with_biases_and_linear_rope_in_f32_gives_the_same_bits() {
    same_bits("llama-f32-linear", GgmlType::F32, WeightDtype::Auto);
}

#[test]
fn llama_in_f16_gives_the_bits_of_f16_weights() {
    same_bits("llama-f32-linear", GgmlType::F16, WeightDtype::F16);
}

#[test]
fn llama3_rope_scaling_comes_back_from_the_rope_factors() {
    // llama-gqa-tied: GQA, tied embeddings, llama3 rope scaling (stored as rope_freqs.weight).
    same_bits("llama-gqa-tied", GgmlType::F16, WeightDtype::Auto);
    let (_tmp, file) = exported("llama-gqa-tied", GgmlType::F16);
    let from_gguf = ModelDir::open(&file).unwrap();
    let from_st = ModelDir::open(fixture("llama-gqa-tied").dir).unwrap();
    assert_eq!(
        from_gguf.transformer_config().rope,
        from_st.transformer_config().rope
    );
}

#[test]
fn gemma3_with_sliding_layers_local_rope_and_stored_w_plus_1_norms_gives_the_same_bits() {
    same_bits("gemma3-window", GgmlType::BF16, WeightDtype::Auto);
    let (_tmp, file) = exported("gemma3-window", GgmlType::BF16);
    let gguf = GgufFile::open(&file).unwrap();
    let norm = gguf.tensor("blk.0.attn_q_norm.weight").unwrap();
    let stored = f32::from_le_bytes(gguf.tensor_bytes(norm)[..4].try_into().unwrap());
    let hf = ModelDir::open(fixture("gemma3-window").dir)
        .unwrap()
        .checkpoint()
        .unwrap()
        .tensor_f32("model.layers.0.self_attn.q_norm.weight", &[8])
        .unwrap();
    assert_eq!(stored, hf[0] + 1.0);
}

#[test]
fn gemma2_s_own_attention_scale_is_refused_on_export() {
    // The fixture's query_pre_attn_scalar (24) is not its head_dim (16): GGUF cannot say so.
    let dir = ModelDir::open(fixture("gemma2-softcap").dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let e = write_gguf(&dir, &tmp.path().join("g.gguf"), GgmlType::F32)
        .unwrap_err()
        .to_string();
    assert!(e.contains("query_pre_attn_scalar"), "{e}");
}

#[test]
fn qwen2_in_bf16_gives_the_same_bits() {
    same_bits("qwen2-bias", GgmlType::BF16, WeightDtype::Auto);
}

#[test]
fn the_llama_q_rows_are_stored_permuted() {
    // Without the loader undoing it, the GGUF's q matrix is not the checkpoint's.
    let (_tmp, file) = exported("llama-f32-linear", GgmlType::F32);
    let gguf = GgufFile::open(&file).unwrap();
    let q = gguf.tensor("blk.0.attn_q.weight").unwrap();
    let stored = gguf.tensor_bytes(q).to_vec();
    let dir = ModelDir::open(fixture("llama-f32-linear").dir).unwrap();
    let hf = dir
        .checkpoint()
        .unwrap()
        .tensor_f32("model.layers.0.self_attn.q_proj.weight", &[32, 32])
        .unwrap();
    let hf: Vec<u8> = hf.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_ne!(stored, hf);
    let through_loader = ModelDir::open(&file)
        .unwrap()
        .checkpoint()
        .unwrap()
        .tensor_f32("model.layers.0.self_attn.q_proj.weight", &[32, 32])
        .unwrap();
    let through_loader: Vec<u8> = through_loader
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(through_loader, hf);
}

#[test]
fn a_directory_with_one_gguf_and_no_config_opens_it() {
    let (tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let dir = ModelDir::open(tmp.path()).unwrap();
    assert_eq!(dir.path(), file);
    assert_eq!(dir.family().model_type(), "qwen2");
    assert_eq!(
        dir.generation(),
        &sieve_backends::GenerationConfig::default()
    );
    std::fs::copy(&file, tmp.path().join("other.gguf")).unwrap();
    let e = ModelDir::open(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("2 GGUF models") && e.contains("other.gguf"),
        "{e}"
    );
}

/// A file with `edit` applied to the exported llama's metadata.
fn edited(edit: impl FnOnce(&mut Vec<(String, Value)>)) -> Result<ModelDir, Error> {
    let (tmp, file) = exported("llama-f32-linear", GgmlType::F32);
    let gguf = GgufFile::open(&file).unwrap();
    let mut meta = gguf.metadata().entries().to_vec();
    edit(&mut meta);
    let mut w = Writer::new();
    for (k, v) in meta {
        w.metadata(k, v);
    }
    for t in gguf.tensors() {
        w.tensor(t.name.clone(), t.ggml_type, &t.dims, gguf.tensor_bytes(t))
            .unwrap();
    }
    let out = tmp.path().join("edited.gguf");
    w.write_file(&out).unwrap();
    let result = ModelDir::open(&out);
    drop(tmp);
    result
}

fn set(meta: &mut Vec<(String, Value)>, key: &str, value: Value) {
    meta.retain(|(k, _)| k != key);
    meta.push((key.to_string(), value));
}

#[test]
fn unsupported_metadata_is_named() {
    let e = edited(|m| set(m, "general.architecture", Value::String("gpt2".into())))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`gpt2` is not supported") && e.contains("qwen3"),
        "{e}"
    );
    let e = edited(|m| set(m, "llama.rope.scaling.type", Value::String("yarn".into())))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("llama.rope.scaling.type") && e.contains("yarn"),
        "{e}"
    );
    let e = edited(|m| set(m, "llama.rope.dimension_count", Value::U32(8)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("partial rotary"), "{e}");
    let e = edited(|m| m.retain(|(k, _)| k != "llama.block_count"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("llama.block_count") && e.contains("absent"),
        "{e}"
    );
    let e = edited(|m| set(m, "llama.block_count", Value::U32(u32::MAX)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("llama.block_count"), "{e}");
    let e = edited(|m| set(m, "llama.embedding_length", Value::String("x".into()))).unwrap_err();
    assert!(e.is_bad_model_file(), "{e}");
    assert!(e.to_string().contains("llama.embedding_length"), "{e}");
}

#[test]
fn a_truncated_gguf_is_a_bad_model_file() {
    let (tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let bytes = std::fs::read(&file).unwrap();
    let cut = tmp.path().join("cut.gguf");
    for len in [0, 3, 20, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let e = ModelDir::open(&cut).unwrap_err();
        assert!(e.is_bad_model_file(), "{len}: {e}");
        assert!(e.to_string().contains("cut.gguf"), "{len}: {e}");
    }
}

/// A copy of the GGUF `file` without its `tokenizer.*` keys.
fn without_tokenizer(file: &Path) -> PathBuf {
    let src = GgufFile::open(file).unwrap();
    let mut w = Writer::new();
    for (key, value) in src.metadata().entries() {
        if !key.starts_with("tokenizer.") {
            w.metadata(key.clone(), value.clone());
        }
    }
    for t in src.tensors() {
        let bytes = src.tensor_bytes(t).to_vec();
        w.tensor(t.name.clone(), t.ggml_type, &t.dims, bytes)
            .unwrap();
    }
    let out = file.with_extension("no-tokenizer.gguf");
    w.write_file(&out).unwrap();
    out
}

#[test]
fn a_gguf_without_tokenizer_metadata_says_so() {
    let (_tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let dir = ModelDir::open(without_tokenizer(&file)).unwrap();
    let e = dir.tokenizer().unwrap_err().to_string();
    assert!(e.contains("tokenizer.ggml.model"), "{e}");
    let e = dir.chat_template().unwrap_err().to_string();
    assert!(e.contains("tokenizer.chat_template"), "{e}");
}

#[test]
fn the_host_path_reads_llama_q_rows_in_place_with_the_order_of_their_outputs() {
    // The q matrix stays the file's bytes (no copy); its product read in the given order is
    // the Hugging Face weights' product, bit for bit.
    let (_tmp, file) = exported("llama-f32-linear", GgmlType::Q8_0);
    let name = "model.layers.1.self_attn.q_proj.weight";
    let gguf = GgufFile::open(&file).unwrap();
    let stored_bytes = gguf
        .tensor_bytes(gguf.tensor("blk.1.attn_q.weight").unwrap())
        .to_vec();
    let dir = ModelDir::open(&file).unwrap();
    let checkpoint = dir.checkpoint().unwrap();
    let (stored, order) = checkpoint.tensor_weights_stored(name, 32, 32).unwrap();
    assert_eq!(stored.view().bytes(), &stored_bytes[..]);
    let order = order.expect("a llama q matrix comes with its output order");
    let in_order = checkpoint.tensor_weights(name, 32, 32).unwrap();
    assert!(!in_order.shares_bytes_with(&stored));
    let x: Vec<f32> = (0..3 * 32)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    let product = sieve_kernels::matmul_nt_vec(&x, 3, &stored.view(), None);
    let expected = sieve_kernels::matmul_nt_vec(&x, 3, &in_order.view(), None);
    for (p, e) in product.chunks(32).zip(expected.chunks(32)) {
        let read: Vec<u32> = order.iter().map(|&i| p[i].to_bits()).collect();
        let want: Vec<u32> = e.iter().map(|v| v.to_bits()).collect();
        assert_eq!(read, want);
    }
    // Matrices that are not permuted come with no order.
    let (_, none) = checkpoint
        .tensor_weights_stored("model.layers.1.self_attn.v_proj.weight", 32, 32)
        .unwrap();
    assert!(none.is_none());
}

#[test]
fn quantized_q_rows_are_put_back_as_whole_blocks() {
    let (_tmp, file) = exported("llama-f32-linear", GgmlType::Q8_0);
    let name = "model.layers.1.self_attn.q_proj.weight";
    let from_gguf = ModelDir::open(&file)
        .unwrap()
        .checkpoint()
        .unwrap()
        .tensor_weights(name, 32, 32)
        .unwrap();
    assert_eq!(from_gguf.quant(), Some(QuantType::Q8_0));
    let hf = ModelDir::open(fixture("llama-f32-linear").dir)
        .unwrap()
        .checkpoint()
        .unwrap()
        .tensor_f32(name, &[32, 32])
        .unwrap();
    let expected = Weights::quantize_f32(&hf, QuantType::Q8_0, 32, 32).unwrap();
    assert_eq!(from_gguf.view().bytes(), expected.view().bytes());
}

/// Largest absolute logit differences (over every position) of the fixture `name` as a GGUF
/// with matrices in `ty`: computed in the blocks against the safetensors directory in f32,
/// the blocks dequantized to f32 against the same (the weights' rounding alone), and
/// computed in the blocks against dequantized (the activations' rounding alone).
fn quantized_distance(name: &str, ty: GgmlType) -> [f32; 3] {
    let f = fixture(name);
    let (_tmp, file) = exported(name, ty);
    let float = logits(&f.dir, WeightDtype::F32, &f.expected.tokens);
    let blocks = logits(&file, WeightDtype::Auto, &f.expected.tokens);
    let dequantized = logits(&file, WeightDtype::F32, &f.expected.tokens);
    let worst = |a: &[Vec<f32>], b: &[Vec<f32>]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| common::max_abs_diff(x, y))
            .fold(0.0, f32::max)
    };
    [
        worst(&blocks, &float),
        worst(&dequantized, &float),
        worst(&blocks, &dequantized),
    ]
}

#[test]
fn quantized_ggufs_stay_near_the_float_model() {
    // The fixtures are tiny random models (rows of 32 to 64 weights, logits up to |20|), so
    // rounding their weights to 4–8 bits moves the logits by whole units; the results are
    // the same bits on every machine, so the bounds sit just above what was measured (with
    // --nocapture this prints the measurements): [blocks vs float, dequantized vs float,
    // blocks vs dequantized].
    for (name, ty, bound) in [
        // Measured: [0.328, 0.280, 0.207].
        ("qwen2-bias", GgmlType::Q8_0, [0.4, 0.34, 0.25]),
        // Measured: [3.19, 3.24, 0.355].
        ("qwen2-bias", GgmlType::Q4_0, [3.9, 3.9, 0.43]),
        // Measured: [4.23, 4.23, 0.203].
        ("qwen2-bias", GgmlType::Q4_1, [5.1, 5.1, 0.25]),
        // Measured: [2.78, 2.92, 0.383].
        ("qwen2-bias", GgmlType::Q5_0, [3.4, 3.5, 0.46]),
        // Measured: [0.740, 0.748, 0.600].
        ("llama-f32-linear", GgmlType::Q8_0, [0.9, 0.9, 0.72]),
        // Measured: [5.29, 5.11, 0.456].
        ("llama-f32-linear", GgmlType::Q5_1, [6.4, 6.2, 0.55]),
    ] {
        let d = quantized_distance(name, ty);
        println!("{name} {ty}: {d:?}");
        for (got, limit) in d.iter().zip(bound) {
            assert!(*got < limit, "{name} {ty}: {d:?} against {bound:?}");
        }
    }
}

#[test]
fn a_split_model_opens_from_its_directory_or_first_shard_with_the_same_bits() {
    let f = fixture("qwen2-bias");
    let (tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let whole = GgufFile::open(&file).unwrap();
    let split = tmp.path().join("split");
    std::fs::create_dir(&split).unwrap();
    let tensors = whole.tensors();
    let (a, b) = tensors.split_at(tensors.len() / 2);
    for (i, part) in [a, b].into_iter().enumerate() {
        let mut w = Writer::new();
        if i == 0 {
            for (k, v) in whole.metadata().entries() {
                w.metadata(k.clone(), v.clone());
            }
            w.metadata("split.tensors.count", Value::I32(tensors.len() as i32));
        }
        w.metadata("split.no", Value::U16(i as u16));
        w.metadata("split.count", Value::U16(2));
        for t in part {
            w.tensor(t.name.clone(), t.ggml_type, &t.dims, whole.tensor_bytes(t))
                .unwrap();
        }
        w.write_file(split.join(format!("q-{:05}-of-00002.gguf", i + 1)))
            .unwrap();
    }
    let expected = logits(&file, WeightDtype::Auto, &f.expected.tokens);
    for path in [split.clone(), split.join("q-00001-of-00002.gguf")] {
        let got = logits(&path, WeightDtype::Auto, &f.expected.tokens);
        assert_eq!(got, expected, "{}", path.display());
    }
    let e = ModelDir::open(split.join("q-00002-of-00002.gguf"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("open the first one"), "{e}");
}

#[test]
fn every_backend_and_path_reads_the_gguf_as_the_safetensors_directory() {
    let f = fixture("llama-f32-linear");
    let (_tmp, file) = exported("llama-f32-linear", GgmlType::F32);
    let (_qtmp, quantized) = exported("llama-f32-linear", GgmlType::Q8_0);
    let st = ModelDir::open(&f.dir).unwrap();
    let gguf = ModelDir::open(&file).unwrap();
    let q = ModelDir::open(&quantized).unwrap();
    let dequantized = logits(&quantized, WeightDtype::F32, &f.expected.tokens);
    for run in common::RUNS {
        let a = run.load_dir(&st).forward_all(&f.expected.tokens).unwrap();
        let b = run.load_dir(&gguf).forward_all(&f.expected.tokens).unwrap();
        assert_eq!(a, b, "{run}");
        // The Burn path widens quantized matrices to f32 tensors: the dequantized model.
        let c = run.load_dir(&q).forward_all(&f.expected.tokens).unwrap();
        if !run.batch_invariant() {
            for (x, y) in c.iter().zip(&dequantized) {
                let d = common::max_abs_diff(x, y);
                assert!(d <= common::TOLERANCE, "{run}: {d}");
            }
        }
    }
}

#[test]
fn every_quantized_type_loads_in_its_blocks_and_dequantizes_for_vectors() {
    use sieve_backends::gguf::{Arch, GgufTensors};
    use sieve_backends::Checkpoint;
    let tmp = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..4 * 256)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
        .collect();
    for ty in QuantType::ALL {
        let matrix = Weights::quantize_f32(&values, ty, 4, 256).unwrap();
        let vector = Weights::quantize_f32(&values[..256], ty, 1, 256).unwrap();
        let ggml = GgmlType::from_id(ty.ggml_type()).unwrap();
        let mut w = Writer::new();
        w.tensor(
            "blk.0.ffn_up.weight",
            ggml,
            &[256, 4],
            matrix.view().bytes(),
        )
        .unwrap();
        w.tensor(
            "blk.0.attn_norm.weight",
            ggml,
            &[256],
            vector.view().bytes(),
        )
        .unwrap();
        let path = tmp.path().join(format!("{ty}.gguf"));
        w.write_file(&path).unwrap();
        let model = sieve_gguf::GgufModel::open(&path).unwrap();
        let checkpoint =
            Checkpoint::from_gguf(GgufTensors::new(model, Arch::Qwen2, (1, 1)).unwrap());
        let got = checkpoint
            .tensor_weights("model.layers.0.mlp.up_proj.weight", 4, 256)
            .unwrap();
        assert_eq!(got.quant(), Some(ty));
        assert_eq!(got.view().bytes(), matrix.view().bytes(), "{ty}");
        let norm = checkpoint
            .tensor_f32("model.layers.0.input_layernorm.weight", &[256])
            .unwrap();
        assert_eq!(norm, vector.view().row_f32(0), "{ty}");
        let e = checkpoint
            .tensor_weights("model.layers.0.mlp.up_proj.weight", 256, 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("blk.0.ffn_up.weight") && e.contains("[4, 256]"),
            "{e}"
        );
    }
}

#[test]
fn an_unsupported_tensor_type_is_refused_by_name() {
    use sieve_backends::gguf::{Arch, GgufTensors};
    use sieve_backends::Checkpoint;
    let tmp = tempfile::tempdir().unwrap();
    let mut w = Writer::new();
    // IQ4_NL: blocks of 32 in 18 bytes; known to the reader, not computed by the kernels.
    w.tensor(
        "blk.0.ffn_up.weight",
        GgmlType::IQ4_NL,
        &[32, 2],
        vec![0u8; 36],
    )
    .unwrap();
    let path = tmp.path().join("iq.gguf");
    w.write_file(&path).unwrap();
    let model = sieve_gguf::GgufModel::open(&path).unwrap();
    let checkpoint = Checkpoint::from_gguf(GgufTensors::new(model, Arch::Qwen2, (1, 1)).unwrap());
    let e = checkpoint
        .tensor_weights("model.layers.0.mlp.up_proj.weight", 2, 32)
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("blk.0.ffn_up.weight") && text.contains("IQ4_NL") && text.contains("Q6_K"),
        "{text}"
    );
    assert!(e.is_bad_model_file());
}

#[test]
fn a_decode_step_reads_the_stored_bytes_of_every_weight_but_the_embedding_rows() {
    let f = fixture("qwen2-bias");
    let st = ModelDir::open(&f.dir).unwrap();
    let config = st.transformer_config();
    // bf16: 2 bytes a weight (the embedding left out: untied, a step reads one row of it).
    let weights = config.weights_read_per_token() as u64;
    assert_eq!(
        st.bytes_read_per_token(WeightDtype::Auto).unwrap(),
        2 * weights
    );
    let (_tmp, file) = exported("qwen2-bias", GgmlType::Q8_0);
    let q = ModelDir::open(&file).unwrap();
    let bytes = q.bytes_read_per_token(WeightDtype::Auto).unwrap();
    // Q8_0 matrices take 34 bytes per 32 weights; the vectors (norms, biases) stay f32.
    assert!(
        bytes < 2 * weights && bytes > weights,
        "{bytes} vs {weights} weights"
    );
}

#[test]
fn mutated_gguf_files_are_errors_or_models_never_panics() {
    let (tmp, file) = exported("qwen2-bias", GgmlType::Q8_0);
    let bytes = std::fs::read(&file).unwrap();
    let header_end = GgufFile::open(&file).unwrap().header().data_offset as usize;
    let path = tmp.path().join("mutated.gguf");
    // A fixed xorshift sequence: the same mutations on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..300 {
        let mut m = bytes.clone();
        for _ in 0..1 + next() % 4 {
            // Mostly the header (counts, lengths, types, dims, offsets), sometimes the data.
            let at = match next() % 4 {
                0 => (next() as usize) % m.len(),
                _ => (next() as usize) % header_end,
            };
            m[at] = next() as u8;
        }
        std::fs::write(&path, &m).unwrap();
        match ModelDir::open(&path) {
            Ok(dir) => {
                opened += 1;
                if let Ok(mut model) = dir.load(BackendKind::Flex) {
                    let _ = model.forward_last(&[1, 2, 3]);
                }
            }
            Err(e) => {
                refused += 1;
                assert!(e.is_bad_model_file(), "{e}");
            }
        }
    }
    println!("{opened} opened, {refused} refused");
    assert!(refused > 0 && opened > 0);
}
