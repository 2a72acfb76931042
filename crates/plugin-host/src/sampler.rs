//! A plugin stage as a [`Sampler`]: builds the state through `create`, hands the candidates
//! to `apply` as arrays and takes them back.

use std::boxed::Box;
use std::ffi::c_void;
use std::format;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use super::descriptor::StageRef;
use super::report::Report;
use sieve_core::{math, Args, BuildContext, Candidates, Context, Error, Sampler};
use sieve_plugin::abi::{AbiBuild, AbiCandidates, AbiStep, STATUS_OK};
use sieve_plugin::value::EncodedArgs;
use sieve_plugin::vocab::EncodedVocab;

/// A built plugin stage.
pub(crate) struct PluginSampler {
    stage: StageRef,
    state: *mut c_void,
    name: String,
    origin: Arc<str>,
    /// Room for the ids a stage keeps of dense candidates.
    ids_out: Vec<u32>,
    /// An error of `accept` or `reset` (which cannot return one), reported by the next `apply`.
    pending: Option<Error>,
}

// SAFETY: the ABI contract lets a state move between threads (the plugin side requires
// `Sampler: Send`); `&mut self` ensures one call at a time.
unsafe impl Send for PluginSampler {}

impl core::fmt::Debug for PluginSampler {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PluginSampler")
            .field("name", &self.name)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// Builds stage `name` of the plugin at `origin` from validated arguments.
pub(crate) fn build(
    stage: StageRef,
    name: &str,
    origin: &Arc<str>,
    args: &Args,
    cx: &BuildContext<'_>,
) -> Result<Box<dyn Sampler>, Error> {
    let encoded = EncodedArgs::new(args);
    let vocab = cx.vocab.map(EncodedVocab::new);
    let abi_vocab = vocab.as_ref().map(EncodedVocab::abi);
    let build = AbiBuild {
        struct_size: core::mem::size_of::<AbiBuild>(),
        seed: cx.seed,
        vocab: abi_vocab
            .as_ref()
            .map_or(core::ptr::null(), |v| v as *const _),
    };
    let mut report = Report::default();
    let sink = report.sink();
    // SAFETY: every pointer passed points at live data of the declared length for the call
    // (`encoded` borrows `args`, `build` borrows `abi_vocab` and `vocab`), as `create` requires.
    let state = unsafe { (stage.0.create)(encoded.as_ptr(), encoded.len(), &build, &sink) };
    if state.is_null() {
        return Err(report.into_error(name, origin, "create", -1));
    }
    Ok(Box::new(PluginSampler {
        stage,
        state,
        name: name.into(),
        origin: Arc::clone(origin),
        ids_out: Vec::new(),
        pending: None,
    }))
}

impl PluginSampler {
    fn broke(&self, what: String) -> Error {
        Error::Stage {
            stage: self.name.clone(),
            message: format!("plugin {} broke the ABI contract: {what}", self.origin),
        }
    }
}

impl Sampler for PluginSampler {
    fn apply(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let n = candidates.len();
        let vocab_size = candidates.vocab_size();
        let dense = candidates.is_dense() && n == vocab_size;
        let sorted = u8::from(candidates.is_sorted());
        let mut abi = if dense {
            if self.ids_out.len() < n {
                self.ids_out.resize(n, 0);
            }
            AbiCandidates {
                struct_size: core::mem::size_of::<AbiCandidates>(),
                ids: core::ptr::null_mut(),
                logits: candidates.logits_mut().as_mut_ptr(),
                len: n,
                vocab_size,
                ids_out: self.ids_out.as_mut_ptr(),
                sorted,
                dense_out: 0,
                selected: -1,
            }
        } else {
            let (ids, logits) = candidates.parts_mut();
            AbiCandidates {
                struct_size: core::mem::size_of::<AbiCandidates>(),
                ids: ids.as_mut_ptr(),
                logits: logits.as_mut_ptr(),
                len: n,
                vocab_size,
                ids_out: core::ptr::null_mut(),
                sorted,
                dense_out: 0,
                selected: -1,
            }
        };
        let step = AbiStep {
            struct_size: core::mem::size_of::<AbiStep>(),
            history: cx.history.as_ptr(),
            history_len: cx.history.len(),
            prompt_len: cx.prompt_len,
            step: cx.step,
        };
        let mut report = Report::default();
        let sink = report.sink();
        // SAFETY: `state` came from this stage's `create` and is used by this call only;
        // the arrays hold `n` elements (`ids_out` too, for dense candidates) and the history
        // `history_len` ids, all alive and otherwise untouched during the call.
        let status = unsafe { (self.stage.0.apply)(self.state, &mut abi, &step, &sink) };
        if status != STATUS_OK {
            return Err(report.into_error(&self.name, &self.origin, "apply", status));
        }
        let kept = abi.len;
        if kept > n {
            return Err(self.broke(format!("apply returned {kept} candidates out of {n}")));
        }
        if dense && abi.dense_out == 0 {
            let (ids, _) = candidates.parts_mut();
            ids[..kept].copy_from_slice(&self.ids_out[..kept]);
        }
        candidates.truncate(kept);
        // The plugin may have reordered the candidates: only its own selection stands.
        candidates.clear_selection();
        candidates.set_sorted(false);
        // One vectorized read in the usual case; the fix-up pass only when needed.
        if !math::none_nan_or_pos_inf(candidates.raw_logits()) {
            for x in candidates.logits_mut() {
                *x = math::sanitize(*x);
            }
        }
        if abi.selected >= 0 {
            let i = usize::try_from(abi.selected).unwrap_or(usize::MAX);
            if i >= kept {
                return Err(self.broke(format!("apply selected position {i} of {kept} candidates")));
            }
            candidates.select(i);
        }
        Ok(())
    }

    fn accept(&mut self, token: u32) {
        let mut report = Report::default();
        let sink = report.sink();
        // SAFETY: `state` came from this stage's `create`; one call at a time.
        let status = unsafe { (self.stage.0.accept)(self.state, token, &sink) };
        if status != STATUS_OK && self.pending.is_none() {
            self.pending = Some(report.into_error(&self.name, &self.origin, "accept", status));
        }
    }

    fn reset(&mut self) {
        let mut report = Report::default();
        let sink = report.sink();
        // SAFETY: `state` came from this stage's `create`; one call at a time.
        let status = unsafe { (self.stage.0.reset)(self.state, &sink) };
        self.pending = (status != STATUS_OK)
            .then(|| report.into_error(&self.name, &self.origin, "reset", status));
    }
}

impl Drop for PluginSampler {
    fn drop(&mut self) {
        // SAFETY: `state` came from this stage's `create` and is destroyed exactly once.
        unsafe { (self.stage.0.destroy)(self.state) }
    }
}
