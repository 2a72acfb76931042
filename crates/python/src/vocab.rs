//! `sieve.Vocab`: every token's bytes and the end-of-sequence ids, for the stages that name
//! tokens by their text (`logit_bias` strings, DRY's sequence breakers, `grammar`).

use std::path::Path;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{guard, Error};

/// A model's vocabulary: token `i` is the bytes `tokens[i]`; `eos` are the end-of-sequence
/// ids.
#[pyclass(module = "sieve._native", name = "Vocab", frozen)]
pub struct PyVocab {
    /// The vocabulary, shared by every pipeline built with it.
    pub inner: Arc<sieve_core::Vocab>,
}

#[pymethods]
impl PyVocab {
    /// `Vocab(tokens, eos)`: `tokens[i]` is the bytes token `i` adds to running text.
    #[new]
    #[pyo3(signature = (tokens, eos))]
    fn new(tokens: Vec<Vec<u8>>, eos: Vec<u32>) -> PyResult<Self> {
        if let Some(&bad) = eos.iter().find(|&&id| id as usize >= tokens.len()) {
            return Err(Error::Input(format!(
                "eos id {bad} is beyond the {} tokens",
                tokens.len()
            ))
            .into());
        }
        Ok(PyVocab {
            inner: Arc::new(sieve_core::Vocab::new(tokens, eos)),
        })
    }

    /// The vocabulary of a Hugging Face `tokenizer.json` (its text): each token's bytes as
    /// `sieve generate` reads them (byte-level BPE and SentencePiece `▁` / `<0xNN>` undone,
    /// added tokens as their content), `size` tokens (default: the tokenizer's; a model's
    /// vocabulary may be larger, its extra ids get no bytes).
    #[staticmethod]
    #[pyo3(signature = (json, eos, size=None))]
    fn from_tokenizer_json(json: &str, eos: Vec<u32>, size: Option<usize>) -> PyResult<Self> {
        let vocab = guard(|| {
            let tokenizer =
                sieve_text::Tokenizer::from_bytes(Path::new("tokenizer.json"), json.as_bytes())
                    .map_err(|e| Error::Tokenizer(e.to_string()))?;
            let size = size.unwrap_or_else(|| tokenizer.vocab_size());
            if let Some(&bad) = eos.iter().find(|&&id| id as usize >= size) {
                return Err(Error::Input(format!(
                    "eos id {bad} is beyond the {size} tokens"
                )));
            }
            Ok(tokenizer.vocab(size, eos))
        })?;
        Ok(PyVocab {
            inner: Arc::new(vocab),
        })
    }

    /// Number of tokens.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The end-of-sequence ids.
    #[getter]
    fn eos(&self) -> Vec<u32> {
        self.inner.eos().to_vec()
    }

    /// The bytes of token `id` (`None` beyond the vocabulary).
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.inner.token_bytes(id).map(|b| PyBytes::new(py, b))
    }

    /// The lowest id whose bytes are exactly `data` (`None` if no token has them).
    fn find(&self, data: &[u8]) -> Option<u32> {
        self.inner.find(data)
    }

    fn __repr__(&self) -> String {
        format!(
            "Vocab({} tokens, eos={:?})",
            self.inner.len(),
            self.inner.eos()
        )
    }
}
