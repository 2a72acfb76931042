//! The decoder-only transformer of the Llama family (`LlamaForCausalLM` and its Mistral and
//! Qwen2 variants, and Qwen3 and Gemma 2/3 through the options of its modules): embedding,
//! pre-norm decoder layers, final RMSNorm, output projection, and optionally final-logit
//! softcapping (Gemma 2).
//! [`TransformerConfig`] (built by a family from `config.json`) → [`Transformer`].

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor, TensorData};

use super::attention::SeqAttention;
use super::block::{DecoderLayer, DecoderLayerConfig};
use super::cache::KvCache;
use super::embedding::{Embedding, EmbeddingConfig};
use super::kernels::Kernels;
use super::kernels::{from_rows, to_rows, Scratch};
use super::linear::{Linear, LinearConfig};
use super::loader::Loader;
use super::norm::{NormConfig, RmsNorm};
use super::rope::{Rope, RopeConfig};
use crate::hf::Checkpoint;
use crate::Result;

/// Everything a [`Transformer`] is made of, layer by layer: what a model family's
/// `config.json` means, with the family's defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformerConfig {
    /// The token embedding (and whether the output projection shares it).
    pub embedding: EmbeddingConfig,
    /// The decoder layers, in order (each with its own attention window).
    pub layers: Vec<DecoderLayerConfig>,
    /// The final norm (`model.norm`).
    pub norm: NormConfig,
    /// The rotary embedding of every layer (of the global layers when there is a
    /// `local_rope`).
    pub rope: RopeConfig,
    /// The rotary embedding of the layers marked [`DecoderLayerConfig::local_rope`] (Gemma 3's
    /// sliding layers use another base), or `None` when every layer uses `rope`.
    pub local_rope: Option<RopeConfig>,
    /// The final-logit softcap `cap` (logits become `cap·tanh(z/cap)`), or `None`.
    pub final_logit_softcap: Option<f64>,
    /// The most positions a sequence may hold (`max_position_embeddings`).
    pub context_len: usize,
}

impl TransformerConfig {
    /// The logits length.
    pub fn vocab_size(&self) -> usize {
        self.embedding.vocab_size
    }

    /// Width of the residual stream.
    pub fn hidden_size(&self) -> usize {
        self.embedding.hidden_size
    }

    /// How many weights one decode step reads: every projection, norm and bias of every
    /// layer, the final norm and the output projection (the embedding contributes one row,
    /// left out). Times the bytes per weight, the memory-bandwidth floor of a decode step.
    pub fn weights_read_per_token(&self) -> usize {
        let hidden = self.hidden_size();
        let layers: usize = self
            .layers
            .iter()
            .map(|l| {
                let a = &l.attention;
                let (q, kv) = (a.num_heads * a.head_dim, a.num_kv_heads * a.head_dim);
                let projections = hidden * (q + 2 * kv) + q * hidden;
                let qkv_bias = if a.qkv_bias { q + 2 * kv } else { 0 };
                let o_bias = if a.o_bias { hidden } else { 0 };
                let qk_norm = a.qk_norm.map_or(0, |_| 2 * a.head_dim);
                let m = &l.mlp;
                let mlp = 3 * m.hidden_size * m.intermediate_size;
                let mlp_bias = if m.bias {
                    2 * m.intermediate_size + m.hidden_size
                } else {
                    0
                };
                let norms = if l.sandwich_norms { 4 } else { 2 } * hidden;
                projections + qkv_bias + o_bias + qk_norm + mlp + mlp_bias + norms
            })
            .sum();
        layers + hidden + self.vocab_size() * hidden
    }

    /// Loads every weight from `checkpoint` onto `device`, to be computed by `kernels`, under the Hugging Face names
    /// (`model.embed_tokens`, `lm_head`, `model.layers.{i}.…`, `model.norm`). With tied
    /// embeddings the output projection is the embedding matrix and `lm_head.weight` is not
    /// read.
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub fn load<B: Backend>(
        &self,
        checkpoint: &Checkpoint,
        device: &B::Device,
        kernels: Kernels,
    ) -> Result<Transformer<B>> {
        let w = Loader::<B>::new(checkpoint, device, kernels);
        let embed_tokens = self.embedding.load(&w, "model.embed_tokens")?;
        let lm_head = match embed_tokens.tied_output() {
            Some(shared) => shared,
            None => LinearConfig::new(self.hidden_size(), self.vocab_size()).load(&w, "lm_head")?,
        };
        let layers = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, layer)| layer.load(&w, &format!("model.layers.{i}")))
            .collect::<Result<_>>()?;
        let norm = self.norm.load(&w, "model.norm")?;
        let local = self.layers.iter().map(|l| l.local_rope).collect::<Vec<_>>();
        Ok(Transformer {
            embed_tokens,
            layers,
            norm,
            lm_head,
            rope: self.rope.init(),
            local_rope: self.local_rope.map(|r| r.init()),
            local,
            final_logit_softcap: self.final_logit_softcap,
            on_host: w.on_host(),
        })
    }
}

/// Which positions a forward pass computes logits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positions {
    /// Only the last one (what generation needs; skips the output projection elsewhere).
    Last,
    /// Every position fed.
    All,
}

/// The weights of a model, generic over the Burn backend.
#[derive(Debug, Clone)]
pub struct Transformer<B: Backend> {
    embed_tokens: Embedding<B>,
    layers: Vec<DecoderLayer<B>>,
    norm: RmsNorm<B>,
    lm_head: Linear<B>,
    rope: Rope,
    local_rope: Option<Rope>,
    /// Per layer: whether it uses `local_rope`.
    local: Vec<bool>,
    final_logit_softcap: Option<f64>,
    /// Whether the layers compute on the host ([`Kernels::Host`]): the forward pass then keeps
    /// its rows in a host buffer from the embedding to the logits.
    on_host: bool,
}

/// The rows between layers: a tensor, or a row-major host buffer on [`Kernels::Host`].
enum Stream<B: Backend> {
    Tensor(Tensor<B, 2>),
    Host(Vec<f32>),
}

/// One sequence's part of a batched forward pass: how many of the ids are its new tokens,
/// its cache, and which of its positions get logits.
#[derive(Debug)]
pub struct SeqInput<'a, B: Backend> {
    /// How many consecutive ids are this sequence's (at least one).
    pub rows: usize,
    /// Its cache (the new positions are appended).
    pub cache: &'a mut KvCache<B>,
    /// Which of its new positions get logits.
    pub positions: Positions,
}

impl<B: Backend> Transformer<B> {
    /// Runs `ids` (already checked against the vocabulary) at the positions after those in
    /// `cache`, appends them to `cache`, and returns the logits.
    ///
    /// # Shapes
    /// `ids`: `[n]` (`n ≥ 1`) → `[n, vocab]` for [`Positions::All`], `[1, vocab]` for
    /// [`Positions::Last`].
    pub fn forward(
        &self,
        ids: Tensor<B, 1, Int>,
        cache: &mut KvCache<B>,
        positions: Positions,
    ) -> Tensor<B, 2> {
        let [n] = ids.dims();
        let mut seqs = [SeqInput {
            rows: n,
            cache,
            positions,
        }];
        self.forward_batch(ids, &mut seqs)
    }

    /// Runs the new tokens of several sequences in one pass: `ids` holds each sequence's
    /// tokens in the order of `seqs`. Embedding, norms, MLPs and every projection run on all
    /// rows at once; attention runs per sequence against its own cache. Returns the logits
    /// rows each sequence asked for, in order: one for [`Positions::Last`], `rows` for
    /// [`Positions::All`].
    ///
    /// # Shapes
    /// `ids`: `[Σ rows]` → `[Σ logits rows, vocab]`.
    pub fn forward_batch(
        &self,
        ids: Tensor<B, 1, Int>,
        seqs: &mut [SeqInput<'_, B>],
    ) -> Tensor<B, 2> {
        let device = ids.device();
        let tables: Vec<_> = seqs
            .iter()
            .map(|s| {
                let past = s.cache.len();
                let global = self.rope.tables::<B>(past, s.rows, &device);
                let local = self
                    .local_rope
                    .as_ref()
                    .map(|r| r.tables::<B>(past, s.rows, &device));
                (past, global, local)
            })
            .collect();
        let x = self.embed_tokens.forward(ids);
        let [n, hidden] = x.dims();
        // On the host the rows stay a plain buffer from the embedding to the logits.
        let mut x = match self.on_host {
            true => Stream::Host(to_rows(x)),
            false => Stream::Tensor(x),
        };
        let mut scratch = Scratch::default();
        for (l, (layer, &local)) in self.layers.iter().zip(&self.local).enumerate() {
            let mut parts: Vec<SeqAttention<'_, B>> = seqs
                .iter_mut()
                .zip(&tables)
                .map(|(s, (past, global, local_tables))| SeqAttention {
                    rows: s.rows,
                    past: *past,
                    rope: match (local_tables, local) {
                        (Some(t), true) => t,
                        _ => global,
                    },
                    cache: &mut s.cache.layers_mut()[l],
                })
                .collect();
            x = match x {
                Stream::Host(mut rows) => {
                    layer.forward_host(&mut rows, n, &mut parts, &mut scratch);
                    Stream::Host(rows)
                }
                Stream::Tensor(x) => Stream::Tensor(layer.forward(x, &mut parts)),
            };
        }
        let mut keep = Vec::new();
        let mut row = 0;
        for s in seqs.iter_mut() {
            s.cache.advance(s.rows);
            match s.positions {
                Positions::Last => keep.push(row + s.rows - 1),
                Positions::All => keep.extend(row..row + s.rows),
            }
            row += s.rows;
        }
        let mut x = match x {
            Stream::Host(rows) => {
                let mut kept = Vec::with_capacity(keep.len() * hidden);
                for &r in &keep {
                    kept.extend_from_slice(&rows[r * hidden..][..hidden]);
                }
                self.norm.forward_host(&mut kept);
                let mut logits = self.lm_head.forward_host(&kept, keep.len());
                if let Some(cap) = self.final_logit_softcap {
                    // The tensor path's operations: divide, tanh, multiply, in `f32`.
                    let cap = cap as f32;
                    logits.iter_mut().for_each(|v| *v = (*v / cap).tanh() * cap);
                }
                let vocab = logits.len() / keep.len().max(1);
                return from_rows(logits, keep.len(), vocab, &device);
            }
            Stream::Tensor(x) => x,
        };
        if keep.len() < row {
            let index: Vec<i64> = keep.iter().map(|&r| r as i64).collect();
            let index =
                Tensor::<B, 1, Int>::from_data(TensorData::new(index, [keep.len()]), &device);
            x = x.select(0, index);
        }
        let logits = self.lm_head.forward(self.norm.forward(x));
        match self.final_logit_softcap {
            Some(cap) => logits.div_scalar(cap).tanh().mul_scalar(cap),
            None => logits,
        }
    }

    /// Number of decoder layers.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }
}
