//! Token embedding: one row of `model.embed_tokens.weight` per token id.

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor};

/// The embedding matrix, kept in whichever orientation the model stores it once.
#[derive(Debug, Clone)]
pub enum Embedding<B: Backend> {
    /// `[vocab, hidden]`, as in the checkpoint (untied output projection).
    Rows(Tensor<B, 2>),
    /// `[hidden, vocab]`: the transposed matrix shared with a tied output projection, so the
    /// weights are held once.
    Columns(Tensor<B, 2>),
}

impl<B: Backend> Embedding<B> {
    /// # Shapes
    /// `ids`: `[n]` → `[n, hidden]`.
    pub fn forward(&self, ids: Tensor<B, 1, Int>) -> Tensor<B, 2> {
        match self {
            Embedding::Rows(w) => w.clone().select(0, ids),
            Embedding::Columns(w) => w.clone().select(1, ids).transpose(),
        }
    }
}
