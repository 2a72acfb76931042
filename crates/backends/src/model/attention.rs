//! Multi-head self-attention with grouped-query heads (GQA, Ainslie et al. 2023,
//! arXiv:2305.13245), RoPE on queries and keys, a KV cache, and a causal (optionally sliding)
//! mask — transformers' `LlamaAttention` / `MistralAttention` / `Qwen2Attention`, and what
//! later families add: a per-head RMSNorm on queries and keys before RoPE (Qwen3, Gemma 3's
//! `q_norm`/`k_norm`), a scale other than `head_dim^-0.5` (Gemma's `query_pre_attn_scalar`),
//! and attention-logit softcapping `cap·tanh(s/cap)` before the mask (Gemma 2).
//!
//! GQA without copying keys: query head `h` uses key/value head `h / groups` (transformers'
//! `repeat_kv` order), so the `[heads, n, d]` queries are viewed as `[kv_heads, groups·n, d]`
//! and multiplied by each key/value head once.
//!
//! [`AttentionConfig`] → [`Attention`].

use burn_tensor::activation::softmax;
use burn_tensor::backend::Backend;
use burn_tensor::Tensor;
use sieve_kernels as kernels;

use super::cache::LayerCache;
use super::kernels::{from_rows, sized, to_rows, window, window_mut, Kernels, Scratch};
use super::linear::{Linear, LinearConfig};
use super::loader::Loader;
use super::mask::{attention_mask, needs_mask};
use super::norm::{NormConfig, RmsNorm};
use super::rope::RopeTables;
use crate::Result;

/// The shape of one layer's [`Attention`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttentionConfig {
    /// Width of the residual stream (`hidden_size`).
    pub hidden_size: usize,
    /// Number of query heads.
    pub num_heads: usize,
    /// Number of key/value heads (grouped-query attention when below `num_heads`; must
    /// divide it).
    pub num_kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Whether the q, k and v projections have a bias.
    pub qkv_bias: bool,
    /// Whether the output projection has a bias.
    pub o_bias: bool,
    /// The sliding window (a query sees the last `w` positions, itself included), or `None`
    /// for full causal attention.
    pub sliding_window: Option<usize>,
    /// The RMSNorm over `head_dim` applied to each query and key head before RoPE
    /// (`{prefix}.q_norm`, `{prefix}.k_norm`), or `None`.
    pub qk_norm: Option<NormConfig>,
    /// The factor scores are multiplied by (`head_dim^-0.5` in Llama).
    pub scale: f64,
    /// The attention-logit softcap `cap` (scores become `cap·tanh(s/cap)`), or `None`.
    pub logit_softcap: Option<f64>,
}

impl AttentionConfig {
    /// Number of query heads sharing one key/value head.
    pub fn group_size(&self) -> usize {
        self.num_heads / self.num_kv_heads
    }

    /// Loads `{prefix}.{q,k,v,o}_proj` (and `{prefix}.{q,k}_norm` with
    /// [`AttentionConfig::qk_norm`]).
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(&self, w: &Loader<'_, B>, prefix: &str) -> Result<Attention<B>> {
        let (h, kv, d) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let hidden = self.hidden_size;
        let qkv = |out: usize| LinearConfig::new(hidden, out).with_bias(self.qkv_bias);
        let o = LinearConfig::new(h * d, hidden).with_bias(self.o_bias);
        let qk_norm = match self.qk_norm {
            Some(norm) => Some((
                norm.load(w, &format!("{prefix}.q_norm"))?,
                norm.load(w, &format!("{prefix}.k_norm"))?,
            )),
            None => None,
        };
        Ok(Attention {
            q_proj: qkv(h * d).load(w, &format!("{prefix}.q_proj"))?,
            k_proj: qkv(kv * d).load(w, &format!("{prefix}.k_proj"))?,
            v_proj: qkv(kv * d).load(w, &format!("{prefix}.v_proj"))?,
            o_proj: o.load(w, &format!("{prefix}.o_proj"))?,
            num_heads: h,
            num_kv_heads: kv,
            head_dim: d,
            window: self.sliding_window,
            qk_norm,
            scale: self.scale,
            logit_softcap: self.logit_softcap,
            kernels: w.kernels(),
        })
    }
}

/// The attention sublayer of one decoder layer (`model.layers.{i}.self_attn`).
#[derive(Debug, Clone)]
pub struct Attention<B: Backend> {
    q_proj: Linear<B>,
    k_proj: Linear<B>,
    v_proj: Linear<B>,
    o_proj: Linear<B>,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    window: Option<usize>,
    qk_norm: Option<(RmsNorm<B>, RmsNorm<B>)>,
    scale: f64,
    logit_softcap: Option<f64>,
    kernels: Kernels,
}

/// One sequence's share of a batched attention pass: its rows of the input, where it
/// stands, its rotary tables and its cache.
#[derive(Debug)]
pub struct SeqAttention<'a, B: Backend> {
    /// How many consecutive rows of the input are this sequence's new positions.
    pub rows: usize,
    /// How many positions its cache held before this pass.
    pub past: usize,
    /// The rotary tables of positions `past .. past + rows`.
    pub rope: &'a RopeTables<B>,
    /// Its cache for this layer (the new keys and values are appended).
    pub cache: &'a mut LayerCache<B>,
}

impl<B: Backend> Attention<B> {
    /// Attends the new positions of several sequences, stacked row-wise in `x` in the order
    /// of `seqs`: the projections run on all rows at once, attention runs per sequence
    /// against its own cache (to which its new keys and values are appended).
    ///
    /// # Shapes
    /// `x`: `[Σ rows, hidden]` → `[Σ rows, hidden]`.
    pub fn forward(&self, x: Tensor<B, 2>, seqs: &mut [SeqAttention<'_, B>]) -> Tensor<B, 2> {
        if self.kernels == Kernels::Host {
            let [n, hidden] = x.dims();
            let device = x.device();
            let mut s = Scratch::default();
            self.forward_host(&to_rows(x), n, seqs, &mut s);
            let out = window(&s.out, n * hidden).to_vec();
            return from_rows(out, n, hidden, &device);
        }
        let [n, _] = x.dims();
        let (h, kv, d) = (self.num_heads, self.num_kv_heads, self.head_dim);
        // The per-head norm sees each head's `d` features as one row.
        let head_norm = |t: Tensor<B, 2>, count: usize, norm: &RmsNorm<B>| {
            norm.forward(t.reshape([n * count, d]))
                .reshape([n, count * d])
        };
        let mut q = self.q_proj.forward(x.clone());
        let mut k = self.k_proj.forward(x.clone());
        let v = self.v_proj.forward(x);
        if let Some((q_norm, k_norm)) = &self.qk_norm {
            q = head_norm(q, h, q_norm);
            k = head_norm(k, kv, k_norm);
        }
        let mut outs = Vec::with_capacity(seqs.len());
        let mut row = 0;
        for seq in seqs.iter_mut() {
            let rows = |t: &Tensor<B, 2>| t.clone().narrow(0, row, seq.rows);
            outs.push(self.attend(rows(&q), rows(&k), rows(&v), seq));
            row += seq.rows;
        }
        let out = if outs.len() == 1 {
            outs.pop().unwrap_or_else(|| unreachable!())
        } else {
            Tensor::cat(outs, 0)
        };
        self.o_proj.forward(out)
    }

    /// Attention of one sequence's `n` new positions, given their projected queries, keys
    /// and values.
    ///
    /// # Shapes
    /// `q`: `[n, heads·d]`, `k`, `v`: `[n, kv_heads·d]` → `[n, heads·d]`.
    fn attend(
        &self,
        q: Tensor<B, 2>,
        k: Tensor<B, 2>,
        v: Tensor<B, 2>,
        seq: &mut SeqAttention<'_, B>,
    ) -> Tensor<B, 2> {
        let [n, _] = q.dims();
        let (h, kv, d) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let groups = h / kv;
        let device = q.device();
        let heads = |t: Tensor<B, 2>, count: usize| t.reshape([n, count, d]).swap_dims(0, 1);
        let q = seq.rope.apply(heads(q, h));
        let k = seq.rope.apply(heads(k, kv));
        let (k, v) = seq.cache.append(k, heads(v, kv));

        let past = seq.past;
        let q = q.reshape([kv, groups * n, d]).mul_scalar(self.scale);
        let mut scores = q.matmul(k.swap_dims(1, 2)); // [kv, groups·n, past + n]
        if let Some(cap) = self.logit_softcap {
            scores = scores.div_scalar(cap).tanh().mul_scalar(cap);
        }
        if needs_mask(past, n, self.window) {
            scores = scores + attention_mask::<B>(past, n, groups, self.window, &device);
        }
        let probs = softmax(scores, 2);
        let out = probs.matmul(v); // [kv, groups·n, d]
        out.reshape([h, n, d]).swap_dims(0, 1).reshape([n, h * d])
    }

    /// [`Attention::forward`] on host rows ([`Kernels::Host`]): `x` is `[n, hidden]`
    /// row-major, the result `s.out[..n·hidden]`. The projections, per-head norms, RoPE and the cache append
    /// work on row-major host buffers, and attention runs in `sieve_kernels::attend` — each
    /// query row sees exactly its visible keys in a fixed order, so `n` tokens in one pass
    /// give the bits of `n` passes of one. (Burn-path projections answer too, through
    /// [`Linear::forward_host`]; the model never mixes the paths.)
    pub(crate) fn forward_host(
        &self,
        x: &[f32],
        n: usize,
        seqs: &mut [SeqAttention<'_, B>],
        s: &mut Scratch,
    ) {
        let (h, kv, d) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let projections = [&self.q_proj, &self.k_proj, &self.v_proj];
        Linear::forward_host_many(&projections, x, n, &mut [&mut s.q, &mut s.k, &mut s.v]);
        let (q, k, v) = (
            window_mut(&mut s.q, n * h * d),
            window_mut(&mut s.k, n * kv * d),
            window(&s.v, n * kv * d),
        );
        if let Some((q_norm, k_norm)) = &self.qk_norm {
            q_norm.forward_host(q);
            k_norm.forward_host(k);
        }
        let shape = kernels::Attention {
            heads: h,
            kv_heads: kv,
            head_dim: d,
            scale: self.scale as f32,
            window: self.window,
            softcap: self.logit_softcap.map(|c| c as f32),
        };
        // Rotate and cache every sequence's new rows first, then attend all of them in one
        // call (`attend_many` writes every output).
        let mut row = 0;
        for seq in seqs.iter_mut() {
            let rows = row..row + seq.rows;
            seq.rope
                .apply_host(&mut q[rows.start * h * d..rows.end * h * d], h);
            let k = &mut k[rows.start * kv * d..rows.end * kv * d];
            seq.rope.apply_host(k, kv);
            seq.cache
                .append_host(k, &v[rows.start * kv * d..rows.end * kv * d], kv, d);
            row = rows.end;
        }
        let out = sized(&mut s.attn, n * h * d);
        let (mut q, mut rest) = (&*q, &mut *out);
        let mut jobs = Vec::with_capacity(seqs.len());
        for seq in seqs.iter() {
            let (queries, q_tail) = q.split_at(seq.rows * h * d);
            let (out, out_tail) = std::mem::take(&mut rest).split_at_mut(seq.rows * h * d);
            let (shared, own) = seq.cache.host();
            jobs.push(kernels::Sequence {
                queries,
                past: seq.past,
                shared,
                own,
                out,
            });
            (q, rest) = (q_tail, out_tail);
        }
        kernels::attend_many(&shape, &mut jobs);
        let out = window(&s.attn, n * h * d);
        self.o_proj.forward_host_into(out, n, &mut s.out);
    }
}
