//! Malformed model directories give errors that name the file (and the tensor), never a panic.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use sieve_backends::{BackendKind, Error, LoadedModel, ModelDir};
use sieve_text::Error as TextError;

/// A copy of fixture `name` in a fresh temporary directory.
fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    fs::create_dir(&dir).unwrap();
    for entry in fs::read_dir(common::fixture_dir(name)).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    (tmp, dir)
}

fn load(dir: &Path) -> Result<LoadedModel, Error> {
    ModelDir::open(dir)?.load(BackendKind::Flex)
}

/// Rewrites `file` with `edit` applied to its list of tensors (name, dtype, shape, bytes).
fn rewrite_safetensors(
    file: &Path,
    edit: impl FnOnce(&mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>),
) {
    let bytes = fs::read(file).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(n, v)| (n, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    edit(&mut tensors);
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    fs::write(file, safetensors::serialize(views, None).unwrap()).unwrap();
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("config.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn ends_with(path: &Path, name: &str) -> bool {
    path.file_name().and_then(|f| f.to_str()) == Some(name)
}

#[test]
fn an_empty_directory_misses_config_json() {
    let tmp = tempfile::tempdir().unwrap();
    match ModelDir::open(tmp.path()).unwrap_err() {
        Error::Text(TextError::MissingFile { path }) => assert!(ends_with(&path, "config.json")),
        e => panic!("{e:?}"),
    }
}

#[test]
fn broken_config_json_is_named() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    fs::write(
        dir.join("config.json"),
        "{\"architectures\": [\"LlamaForCausalLM\"],",
    )
    .unwrap();
    let e = load(&dir).unwrap_err();
    assert!(
        matches!(&e, Error::Text(TextError::Json { path, .. }) if ends_with(path, "config.json")),
        "{e:?}"
    );
}

#[test]
fn unknown_architecture_lists_the_supported_ones() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    edit_config(&dir, |v| {
        v["architectures"] = serde_json::json!(["GPTNeoXForCausalLM"])
    });
    let e = load(&dir).unwrap_err();
    assert!(matches!(e, Error::UnknownArchitecture { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("GPTNeoXForCausalLM") && msg.contains("Qwen2ForCausalLM"),
        "{msg}"
    );
}

#[test]
fn a_config_field_of_the_wrong_type_is_named() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    edit_config(&dir, |v| v["num_attention_heads"] = serde_json::json!("2"));
    match load(&dir).unwrap_err() {
        Error::Text(TextError::Json { path, field, .. }) => {
            assert!(ends_with(&path, "config.json"));
            assert_eq!(field.as_deref(), Some("num_attention_heads"));
        }
        e => panic!("{e:?}"),
    }
    let (_t, dir) = copy_fixture("llama-gqa-tied");
    edit_config(&dir, |v| {
        v["rope_scaling"]["factor"] = serde_json::json!("eight")
    });
    let e = load(&dir).unwrap_err();
    assert!(e.to_string().contains("rope_scaling.factor"), "{e}");
}

#[test]
fn a_broken_generation_config_is_named() {
    let (_t, dir) = copy_fixture("llama-gqa-tied");
    fs::write(
        dir.join("generation_config.json"),
        "{\"eos_token_id\": \"</s>\"}",
    )
    .unwrap();
    match ModelDir::open(&dir).unwrap_err() {
        Error::Text(TextError::Json { path, field, .. }) => {
            assert!(ends_with(&path, "generation_config.json"));
            assert_eq!(field.as_deref(), Some("eos_token_id"));
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn missing_weights_name_model_safetensors() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    fs::remove_file(dir.join("model.safetensors")).unwrap();
    match load(&dir).unwrap_err() {
        Error::Text(TextError::MissingFile { path }) => {
            assert!(ends_with(&path, "model.safetensors"))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn truncated_or_corrupt_safetensors_are_errors() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    let file = dir.join("model.safetensors");
    let bytes = fs::read(&file).unwrap();
    // Truncated data: the tensor whose offsets leave the file is named.
    fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
    match load(&dir).unwrap_err() {
        Error::BadTensor {
            path,
            name,
            message,
        } => {
            assert!(ends_with(&path, "model.safetensors"));
            assert_eq!(name, "model.norm.weight");
            assert!(message.contains("outside"), "{message}");
        }
        e => panic!("truncated data: {e:?}"),
    }
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated header", bytes[..20].to_vec()),
        ("empty", Vec::new()),
        ("huge header length", {
            let mut b = bytes.clone();
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("garbage header", {
            let mut b = bytes.clone();
            for x in &mut b[8..40] {
                *x = b'#';
            }
            b
        }),
        ("extra bytes", {
            let mut b = bytes.clone();
            b.extend_from_slice(&[0; 16]);
            b
        }),
    ];
    for (what, content) in cases {
        fs::write(&file, content).unwrap();
        match load(&dir).unwrap_err() {
            Error::Safetensors { path, .. } => {
                assert!(ends_with(&path, "model.safetensors"), "{what}")
            }
            e => panic!("{what}: {e:?}"),
        }
    }
}

#[test]
fn a_missing_tensor_is_named_with_its_file() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    rewrite_safetensors(&dir.join("model.safetensors"), |t| {
        t.retain(|(n, ..)| n != "model.layers.1.mlp.up_proj.weight")
    });
    match load(&dir).unwrap_err() {
        Error::MissingTensor { path, name } => {
            assert!(ends_with(&path, "model.safetensors"));
            assert_eq!(name, "model.layers.1.mlp.up_proj.weight");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn an_untied_model_without_lm_head_is_an_error() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    edit_config(&dir, |v| {
        v["tie_word_embeddings"] = serde_json::json!(false)
    });
    let e = load(&dir).unwrap_err();
    assert!(
        matches!(&e, Error::MissingTensor { name, .. } if name == "lm_head.weight"),
        "{e:?}"
    );
}

#[test]
fn a_shape_that_disagrees_with_the_config_shows_both() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    edit_config(&dir, |v| v["intermediate_size"] = serde_json::json!(50));
    match load(&dir).unwrap_err() {
        Error::TensorShape {
            path,
            name,
            expected,
            found,
        } => {
            assert!(ends_with(&path, "model.safetensors"));
            assert_eq!(name, "model.layers.0.mlp.gate_proj.weight");
            assert_eq!((expected, found), (vec![50, 32], vec![48, 32]));
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn an_unsupported_dtype_is_named() {
    let (_t, dir) = copy_fixture("llama-f32-linear");
    rewrite_safetensors(&dir.join("model.safetensors"), |t| {
        for (n, d, ..) in t.iter_mut() {
            if n == "model.norm.weight" {
                *d = Dtype::I32;
            }
        }
    });
    match load(&dir).unwrap_err() {
        Error::TensorDtype { name, found, .. } => {
            assert_eq!(name, "model.norm.weight");
            assert_eq!(found, "I32");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn sharded_checkpoint_errors_name_the_index_or_the_shard() {
    let name = "mistral-window-sharded";
    // A shard the index names is missing.
    let (_t, dir) = copy_fixture(name);
    fs::remove_file(dir.join("model-00002-of-00004.safetensors")).unwrap();
    match load(&dir).unwrap_err() {
        Error::Text(TextError::MissingFile { path }) => {
            assert!(ends_with(&path, "model-00002-of-00004.safetensors"))
        }
        e => panic!("{e:?}"),
    }
    // The index is not valid.
    let (_t, dir) = copy_fixture(name);
    fs::write(
        dir.join("model.safetensors.index.json"),
        "{\"weight_map\": [1, 2]}",
    )
    .unwrap();
    match load(&dir).unwrap_err() {
        Error::Text(TextError::Json { path, field, .. }) => {
            assert!(ends_with(&path, "model.safetensors.index.json"));
            assert_eq!(field.as_deref(), Some("weight_map"));
        }
        e => panic!("{e:?}"),
    }
    // The index does not list a tensor.
    let (_t, dir) = copy_fixture(name);
    let index = dir.join("model.safetensors.index.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&index).unwrap()).unwrap();
    v["weight_map"]
        .as_object_mut()
        .unwrap()
        .remove("model.norm.weight");
    fs::write(&index, serde_json::to_vec(&v).unwrap()).unwrap();
    match load(&dir).unwrap_err() {
        Error::MissingTensor { path, name } => {
            assert!(ends_with(&path, "model.safetensors.index.json"));
            assert_eq!(name, "model.norm.weight");
        }
        e => panic!("{e:?}"),
    }
    // The index points a tensor at a shard that does not hold it.
    let (_t, dir) = copy_fixture(name);
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&index).unwrap()).unwrap();
    let wrong = if v["weight_map"]["model.norm.weight"] == "model-00001-of-00004.safetensors" {
        "model-00002-of-00004.safetensors"
    } else {
        "model-00001-of-00004.safetensors"
    };
    v["weight_map"]["model.norm.weight"] = serde_json::json!(wrong);
    fs::write(
        dir.join("model.safetensors.index.json"),
        serde_json::to_vec(&v).unwrap(),
    )
    .unwrap();
    match load(&dir).unwrap_err() {
        Error::MissingTensor { path, name } => {
            assert!(ends_with(&path, wrong));
            assert_eq!(name, "model.norm.weight");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn tokenizer_errors_name_the_file() {
    let (_t, dir) = copy_fixture("qwen2-bias");
    let model_dir = ModelDir::open(&dir).unwrap();
    fs::write(
        dir.join("tokenizer.json"),
        "{\"model\": {\"type\": \"BPE\", \"vocab\": 3}}",
    )
    .unwrap();
    match model_dir.tokenizer().unwrap_err() {
        Error::Text(TextError::Tokenizer { path, .. }) => {
            assert!(ends_with(&path, "tokenizer.json"))
        }
        e => panic!("{e:?}"),
    }
    fs::remove_file(dir.join("tokenizer.json")).unwrap();
    assert!(matches!(
        model_dir.tokenizer().unwrap_err(),
        Error::Text(TextError::MissingFile { .. })
    ));
}

#[test]
fn bad_inputs_to_a_loaded_model_are_errors() {
    let dir = ModelDir::open(common::fixture_dir("llama-f32-linear")).unwrap();
    let mut model = dir.load(BackendKind::Ndarray).unwrap();
    let vocab = dir.vocab_size() as u32;
    assert!(matches!(
        model.forward_last(&[]).unwrap_err(),
        Error::Engine(sieve_engine::Error::EmptyPrompt)
    ));
    match model.forward_last(&[1, vocab]).unwrap_err() {
        Error::TokenOutOfRange { token, vocab_size } => {
            assert_eq!((token, vocab_size), (vocab, 300))
        }
        e => panic!("{e:?}"),
    }
    let context = dir.context_len();
    let too_long = vec![1u32; context + 1];
    assert!(matches!(
        model.forward_last(&too_long).unwrap_err(),
        Error::Engine(sieve_engine::Error::ContextOverflow { .. })
    ));
    // Errors leave the cache as it was.
    assert_eq!(sieve_engine::LanguageModel::position(&model), 0);
    model.forward_last(&vec![1u32; context]).unwrap();
    assert!(matches!(
        model.forward_last(&[1]).unwrap_err(),
        Error::Engine(sieve_engine::Error::ContextOverflow { .. })
    ));
}

#[test]
fn cuda_is_a_clear_error_when_it_cannot_run() {
    let dir = ModelDir::open(common::fixture_dir("llama-f32-linear")).unwrap();
    if BackendKind::Cuda.check_available().is_ok() {
        return; // A GPU is present: nothing to check here.
    }
    match dir.load(BackendKind::Cuda).unwrap_err() {
        Error::BackendUnavailable { backend, reason } => {
            assert_eq!(backend, "cuda");
            assert!(!reason.is_empty());
        }
        e => panic!("{e:?}"),
    }
}
