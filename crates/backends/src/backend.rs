//! Choosing the Burn backend at run time: `ndarray` (burn-ndarray), `flex` (burn-flex), or
//! `cuda` (burn-cuda, only with the `cuda` cargo feature), and [`LoadedModel`], a model on
//! whichever of them was chosen.

use std::fmt;
use std::str::FromStr;

use burn_flex::{Flex, FlexDevice};
use burn_ndarray::{NdArray, NdArrayDevice};

use sieve_engine::{BatchModel, Feed, LanguageModel, SeqId};

use crate::dtype::{KvDtype, WeightDtype};
use crate::hf::Checkpoint;
use crate::model::{Kernels, Model, TransformerConfig};
use crate::{Error, Result};

#[cfg(feature = "cuda")]
use burn_cuda::{Cuda, CudaDevice};

/// A Burn backend that can be chosen at run time.
///
/// The default is `flex`: on a SmolLM2-135M-shaped model (f32, 2 shared cores, x86-64-v3) it
/// decoded 20 tok/s against 3.7 for `ndarray`, and prefilled 179 tok/s against 139.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BackendKind {
    /// burn-ndarray: portable CPU backend (matrixmultiply + rayon).
    Ndarray,
    /// burn-flex: CPU backend with SIMD kernels, gemm and threads.
    #[default]
    Flex,
    /// burn-cuda: NVIDIA GPUs (cargo feature `cuda`; needs the driver at run time).
    Cuda,
}

impl BackendKind {
    /// Every backend, in the order `--backend` lists them.
    pub const ALL: [BackendKind; 3] = [BackendKind::Ndarray, BackendKind::Flex, BackendKind::Cuda];

    /// Who computes the linear layers and attention: sieve's batch-invariant host kernels on
    /// the CPU backends, the backend's own operations on CUDA.
    pub fn kernels(self) -> Kernels {
        match self {
            BackendKind::Ndarray | BackendKind::Flex => Kernels::Host,
            BackendKind::Cuda => Kernels::Backend,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Ndarray => "ndarray",
            BackendKind::Flex => "flex",
            BackendKind::Cuda => "cuda",
        }
    }

    /// Whether this build includes the backend (`cuda` needs the cargo feature).
    pub fn is_compiled(self) -> bool {
        match self {
            BackendKind::Ndarray | BackendKind::Flex => true,
            BackendKind::Cuda => cfg!(feature = "cuda"),
        }
    }

    /// Whether the model's weights can be kept in `dtype` on this backend: any on the CPU
    /// backends (their kernels read `f32`, `bf16` and `f16`); `auto` and `f32` on CUDA, whose
    /// tensors are `f32`.
    ///
    /// # Errors
    /// [`Error::DtypeUnavailable`].
    pub fn check_dtype(self, dtype: WeightDtype) -> Result<()> {
        match (self.kernels(), dtype) {
            (Kernels::Host, _) | (_, WeightDtype::Auto | WeightDtype::F32) => Ok(()),
            _ => Err(Error::DtypeUnavailable {
                backend: self.name(),
                dtype: dtype.name(),
            }),
        }
    }

    /// Whether the key/value cache can be kept in `dtype` on this backend: any on the CPU
    /// backends; `f32` on CUDA, whose cache is `f32` tensors.
    ///
    /// # Errors
    /// [`Error::KvDtypeUnavailable`].
    pub fn check_kv_dtype(self, dtype: KvDtype) -> Result<()> {
        match (self.kernels(), dtype) {
            (Kernels::Host, _) | (_, KvDtype::F32) => Ok(()),
            _ => Err(Error::KvDtypeUnavailable {
                dtype: dtype.name(),
            }),
        }
    }

    /// Checks that the backend can run here: compiled in and, for CUDA, a driver library,
    /// NVRTC and at least one device.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] saying what is missing.
    pub fn check_available(self) -> Result<()> {
        match self {
            BackendKind::Ndarray | BackendKind::Flex => Ok(()),
            BackendKind::Cuda => cuda_check().map_err(|reason| Error::BackendUnavailable {
                backend: self.name(),
                reason,
            }),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        BackendKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| Error::UnknownBackend {
                name: s.to_string(),
            })
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_check() -> std::result::Result<(), String> {
    Err("this build of sieve has no CUDA support (rebuild with `--features cuda`)".to_string())
}

#[cfg(feature = "cuda")]
fn cuda_check() -> std::result::Result<(), String> {
    // SAFETY: loading the CUDA driver and NVRTC libraries runs their initializers; these are
    // the libraries burn-cuda itself loads on first use, so checking for them first adds no
    // new code to the process, and no CUDA function is called when they are absent.
    let driver = unsafe { cudarc::driver::sys::is_culib_present() };
    if !driver {
        return Err("the CUDA driver library (libcuda.so) was not found".to_string());
    }
    // SAFETY: as for the driver: the NVRTC library burn-cuda loads anyway, nothing called.
    let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if !nvrtc {
        return Err(
            "the NVRTC library (libnvrtc.so), which compiles the kernels, was not found"
                .to_string(),
        );
    }
    cudarc::driver::result::init()
        .map_err(|e| format!("the CUDA driver failed to initialize: {e:?}"))?;
    let count = cudarc::driver::result::device::get_count()
        .map_err(|e| format!("cannot count CUDA devices: {e:?}"))?;
    if count < 1 {
        return Err("no CUDA device was found".to_string());
    }
    Ok(())
}

/// A model on the backend chosen at run time.
#[derive(Debug)]
pub enum LoadedModel {
    /// On burn-ndarray.
    Ndarray(Model<NdArray<f32>>),
    /// On burn-flex.
    Flex(Model<Flex>),
    /// On burn-cuda, device 0.
    #[cfg(feature = "cuda")]
    Cuda(Model<Cuda<f32, i32>>),
}

/// Calls the same method on whichever model is inside.
macro_rules! dispatch {
    ($self:expr, $m:ident => $e:expr) => {
        match $self {
            LoadedModel::Ndarray($m) => $e,
            LoadedModel::Flex($m) => $e,
            #[cfg(feature = "cuda")]
            LoadedModel::Cuda($m) => $e,
        }
    };
}

impl LoadedModel {
    /// Builds the model of `config` from `checkpoint` on the backend `kind` (device 0 for
    /// CUDA). [`crate::ModelDir::load`] is the usual way in.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when `kind` cannot run here, then the errors of
    /// [`TransformerConfig::load`].
    pub fn from_checkpoint(
        kind: BackendKind,
        config: TransformerConfig,
        checkpoint: &Checkpoint,
    ) -> Result<Self> {
        Self::from_checkpoint_with(kind, kind.kernels(), config, checkpoint)
    }

    /// [`LoadedModel::from_checkpoint`] computed by `kernels` rather than the backend's
    /// default ([`BackendKind::kernels`]): [`Kernels::Backend`] on `ndarray` or `flex` runs
    /// the Burn path — the tensor operations `--backend cuda` runs — on the CPU, which is
    /// how the tests hold that path to the transformers fixtures without a GPU.
    /// [`Kernels::Host`] on `cuda` is refused: the host kernels read host memory.
    ///
    /// # Errors
    /// As [`LoadedModel::from_checkpoint`]; [`Error::BackendUnavailable`] for
    /// [`Kernels::Host`] on `cuda`.
    pub fn from_checkpoint_with(
        kind: BackendKind,
        kernels: Kernels,
        config: TransformerConfig,
        checkpoint: &Checkpoint,
    ) -> Result<Self> {
        kind.check_available()?;
        if kind == BackendKind::Cuda && kernels == Kernels::Host {
            return Err(Error::BackendUnavailable {
                backend: kind.name(),
                reason: "the host kernels compute on the CPU; `cuda` runs the Burn path"
                    .to_string(),
            });
        }
        match kind {
            BackendKind::Ndarray => Ok(LoadedModel::Ndarray(Model::from_checkpoint(
                config,
                checkpoint,
                NdArrayDevice::Cpu,
                kernels,
            )?)),
            BackendKind::Flex => Ok(LoadedModel::Flex(Model::from_checkpoint(
                config, checkpoint, FlexDevice, kernels,
            )?)),
            #[cfg(feature = "cuda")]
            BackendKind::Cuda => Ok(LoadedModel::Cuda(Model::from_checkpoint(
                config,
                checkpoint,
                CudaDevice::new(0),
                kernels,
            )?)),
            #[cfg(not(feature = "cuda"))]
            BackendKind::Cuda => Err(Error::BackendUnavailable {
                backend: kind.name(),
                reason: cuda_check().err().unwrap_or_default(),
            }),
        }
    }

    /// Who computes the model: [`Kernels::Host`] (the host path, `forward_host`) or
    /// [`Kernels::Backend`] (the Burn path, `forward`).
    pub fn kernels(&self) -> Kernels {
        dispatch!(self, m => m.kernels())
    }

    /// The backend the model runs on.
    pub fn backend(&self) -> BackendKind {
        match self {
            LoadedModel::Ndarray(_) => BackendKind::Ndarray,
            LoadedModel::Flex(_) => BackendKind::Flex,
            #[cfg(feature = "cuda")]
            LoadedModel::Cuda(_) => BackendKind::Cuda,
        }
    }

    /// What the model is made of.
    pub fn config(&self) -> &TransformerConfig {
        dispatch!(self, m => m.config())
    }

    /// As [`Model::weights_dtype`].
    pub fn weights_dtype(&self) -> sieve_kernels::Dtype {
        dispatch!(self, m => m.weights_dtype())
    }

    /// As [`Model::set_kv_dtype`].
    ///
    /// # Errors
    /// As [`Model::set_kv_dtype`].
    pub fn set_kv_dtype(&mut self, dtype: KvDtype) -> Result<()> {
        dispatch!(self, m => m.set_kv_dtype(dtype))
    }

    /// As [`Model::kv_dtype`].
    pub fn kv_dtype(&self) -> KvDtype {
        dispatch!(self, m => m.kv_dtype())
    }

    /// As [`Model::bytes_per_weight`].
    pub fn bytes_per_weight(&self) -> usize {
        dispatch!(self, m => m.bytes_per_weight())
    }

    /// As [`Model::forward_last`].
    ///
    /// # Errors
    /// As [`Model::forward_last`].
    pub fn forward_last(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        dispatch!(self, m => m.forward_last(tokens))
    }

    /// As [`Model::forward_all`].
    ///
    /// # Errors
    /// As [`Model::forward_all`].
    pub fn forward_all(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
        dispatch!(self, m => m.forward_all(tokens))
    }
}

impl LanguageModel for LoadedModel {
    fn vocab_size(&self) -> usize {
        self.config().vocab_size()
    }

    fn context_len(&self) -> usize {
        self.config().context_len
    }

    fn position(&self) -> usize {
        dispatch!(self, m => m.position())
    }

    fn reset(&mut self) {
        dispatch!(self, m => m.reset())
    }

    fn truncate(&mut self, len: usize) {
        dispatch!(self, m => m.truncate(len))
    }

    fn reserve(&mut self, positions: usize) {
        dispatch!(self, m => LanguageModel::reserve(m, positions))
    }

    fn forward(&mut self, tokens: &[u32]) -> sieve_engine::Result<Vec<f32>> {
        self.forward_last(tokens).map_err(Into::into)
    }
}

impl BatchModel for LoadedModel {
    fn vocab_size(&self) -> usize {
        self.config().vocab_size()
    }

    fn context_len(&self) -> usize {
        self.config().context_len
    }

    fn open(&mut self) -> SeqId {
        dispatch!(self, m => m.open())
    }

    fn fork(&mut self, seq: SeqId) -> sieve_engine::Result<SeqId> {
        dispatch!(self, m => m.fork(seq))
    }

    fn close(&mut self, seq: SeqId) {
        dispatch!(self, m => m.close(seq))
    }

    fn position(&self, seq: SeqId) -> sieve_engine::Result<usize> {
        dispatch!(self, m => BatchModel::position(m, seq))
    }

    fn truncate(&mut self, seq: SeqId, len: usize) -> sieve_engine::Result<()> {
        dispatch!(self, m => BatchModel::truncate(m, seq, len))
    }

    fn reserve(&mut self, seq: SeqId, positions: usize) {
        dispatch!(self, m => BatchModel::reserve(m, seq, positions))
    }

    fn step(&mut self, feeds: &[Feed<'_>]) -> sieve_engine::Result<Vec<Vec<f32>>> {
        dispatch!(self, m => m.step(feeds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for k in BackendKind::ALL {
            assert_eq!(k.name().parse::<BackendKind>().unwrap(), k);
        }
        let e = "tpu".parse::<BackendKind>().unwrap_err();
        assert!(e.to_string().contains("ndarray, flex, cuda"), "{e}");
    }

    #[test]
    fn the_default_is_flex() {
        assert_eq!(BackendKind::default(), BackendKind::Flex);
    }

    #[test]
    fn cpu_backends_are_always_available() {
        assert!(BackendKind::Ndarray.check_available().is_ok());
        assert!(BackendKind::Flex.check_available().is_ok());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_is_a_clear_error() {
        assert!(!BackendKind::Cuda.is_compiled());
        let e = BackendKind::Cuda.check_available().unwrap_err();
        assert!(e.to_string().contains("--features cuda"), "{e}");
    }
}
