//! The native `Pipeline` class: one sequence's pipeline for Python (`sieve.Pipeline` wraps it
//! and converts arrays). Arrays arrive as addresses checked by the Python side ([`Raw`]).

use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{guard, Error};
use crate::raw::Raw;
use crate::registry;
use crate::sequence::{History, Sequence};
use crate::vocab::PyVocab;

/// One sequence's pipeline: built stages with their state and random stream. Calls from
/// several threads take turns (the GIL is released while a step runs).
#[pyclass(module = "sieve._native", name = "Pipeline", frozen)]
pub struct PyPipeline {
    /// The sequence.
    seq: Mutex<Sequence>,
}

impl PyPipeline {
    /// A pipeline over `seq`.
    pub fn new_native(seq: Sequence) -> Self {
        PyPipeline {
            seq: Mutex::new(seq),
        }
    }

    /// The sequence, waiting for a call on another thread to end (a panic caught in an
    /// earlier call leaves the sequence usable: its next `reset` restores it).
    pub fn lock(&self) -> MutexGuard<'_, Sequence> {
        self.seq.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The logits and history of a call, from addresses.
pub struct Inputs {
    /// Float32 logits.
    pub logits: Raw,
    /// Uint32 history tokens.
    pub history: Raw,
    /// How many history tokens are the prompt (`None`: all of them).
    pub prompt_len: Option<usize>,
}

impl Inputs {
    /// Checks the addresses.
    ///
    /// # Errors
    /// [`Error::Input`] for a null or misaligned address.
    pub fn new(
        logits: (usize, usize),
        history: (usize, usize),
        prompt_len: Option<usize>,
    ) -> Result<Inputs, Error> {
        Ok(Inputs {
            logits: Raw::checked::<f32>(logits.0, logits.1, format_args!("logits"))?,
            history: Raw::checked::<u32>(history.0, history.1, format_args!("history"))?,
            prompt_len,
        })
    }

    /// Runs `f` on the slices.
    ///
    /// # Safety
    /// As [`Raw::slice`] for both arrays.
    pub unsafe fn with<T>(&self, f: impl FnOnce(&[f32], History<'_>) -> T) -> T {
        // SAFETY: the caller's promise.
        let (logits, tokens) = unsafe { (self.logits.slice::<f32>(), self.history.slice::<u32>()) };
        let prompt_len = self.prompt_len.unwrap_or(tokens.len());
        f(logits, History { tokens, prompt_len })
    }
}

#[pymethods]
impl PyPipeline {
    /// Compiles `text` with the stages known now (built-ins and loaded plugins).
    #[new]
    #[pyo3(signature = (text, seed=0, vocab=None))]
    fn new(text: &str, seed: u64, vocab: Option<PyRef<'_, PyVocab>>) -> PyResult<Self> {
        let vocab = vocab.map(|v| Arc::clone(&v.inner));
        let seq = guard(|| Sequence::new(text, seed, vocab, registry::current()))?;
        Ok(PyPipeline::new_native(seq))
    }

    /// The pipeline in canonical form.
    #[getter]
    fn canonical(&self) -> String {
        self.lock().canonical()
    }

    /// The seed it was built with.
    #[getter]
    fn seed(&self) -> u64 {
        self.lock().seed()
    }

    /// The selector's name (`dist`, `greedy`, a mirostat).
    #[getter]
    fn selector(&self) -> String {
        self.lock().selector().to_string()
    }

    /// The tokens accepted since the last reset.
    #[getter]
    fn accepted(&self) -> Vec<u32> {
        self.lock().accepted().to_vec()
    }

    /// The selected token, from addresses (see `sieve.Pipeline.apply`).
    fn _select(
        &self,
        py: Python<'_>,
        logits: (usize, usize),
        history: (usize, usize),
        prompt_len: Option<usize>,
    ) -> PyResult<u32> {
        let inputs = Inputs::new(logits, history, prompt_len)?;
        // SAFETY: the Python wrapper passes live, contiguous arrays of the right dtype and
        // keeps them referenced for this call (see `raw`).
        let token =
            py.detach(|| guard(|| unsafe { inputs.with(|l, h| self.lock().select(l, h)) }))?;
        Ok(token)
    }

    /// (ids as uint32 bytes, probabilities as float32 bytes), from addresses.
    fn _probabilities<'py>(
        &self,
        py: Python<'py>,
        logits: (usize, usize),
        history: (usize, usize),
        prompt_len: Option<usize>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let inputs = Inputs::new(logits, history, prompt_len)?;
        // SAFETY: as in `_select`.
        let (ids, probs) =
            py.detach(|| guard(|| unsafe { inputs.with(|l, h| self.lock().probabilities(l, h)) }))?;
        let ids: Vec<u8> = ids.iter().flat_map(|x| x.to_ne_bytes()).collect();
        let probs: Vec<u8> = probs.iter().flat_map(|x| x.to_ne_bytes()).collect();
        Ok((PyBytes::new(py, &ids), PyBytes::new(py, &probs)))
    }

    /// Passes `token` to every stage.
    fn accept(&self, token: u32) -> PyResult<()> {
        guard(|| {
            self.lock().accept(token);
            Ok(())
        })?;
        Ok(())
    }

    /// Back to the freshly built state.
    fn reset(&self) -> PyResult<()> {
        guard(|| {
            self.lock().reset();
            Ok(())
        })?;
        Ok(())
    }

    /// A copy seeded with `seed` that has accepted the same tokens.
    fn fork(&self, seed: u64) -> PyResult<PyPipeline> {
        let seq = guard(|| self.lock().fork(seed))?;
        Ok(PyPipeline::new_native(seq))
    }

    fn __repr__(&self) -> String {
        let seq = self.lock();
        format!("Pipeline({:?}, seed={})", seq.canonical(), seq.seed())
    }
}
