//! Token embedding: one row of `model.embed_tokens.weight` per token id; with tied weights the
//! same matrix is the output projection. [`EmbeddingConfig`] → [`Embedding`].

use burn_tensor::backend::Backend;
use burn_tensor::{Int, Tensor, TensorData};
use sieve_kernels::Weights;

use super::linear::Linear;
use super::loader::Loader;
use crate::Result;

/// The shape of the [`Embedding`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmbeddingConfig {
    /// Number of token ids (rows).
    pub vocab_size: usize,
    /// Width of one embedding (`hidden_size`).
    pub hidden_size: usize,
    /// Whether the output projection is this matrix (`tie_word_embeddings`).
    pub tied: bool,
    /// A factor the looked-up embeddings are multiplied by (Gemma's `√hidden_size`, already
    /// rounded to `f32`, the dtype the model computes in); `None` for none.
    pub scale: Option<f32>,
}

impl EmbeddingConfig {
    /// Loads `{prefix}.weight` (`[vocab_size, hidden_size]`), kept in the orientation a tied
    /// output projection multiplies by when `tied`.
    ///
    /// # Errors
    /// [`crate::Error::MissingTensor`], [`crate::Error::TensorShape`],
    /// [`crate::Error::TensorDtype`].
    pub(crate) fn load<B: Backend>(&self, w: &Loader<'_, B>, prefix: &str) -> Result<Embedding<B>> {
        let name = format!("{prefix}.weight");
        let (vocab, hidden) = (self.vocab_size, self.hidden_size);
        let matrix = if w.on_host() {
            Matrix::Bytes {
                weights: w.weights(&name, vocab, hidden)?,
                tied: self.tied,
            }
        } else if self.tied {
            Matrix::Columns(w.matrix_transposed(&name, vocab, hidden)?)
        } else {
            Matrix::Rows(w.matrix(&name, vocab, hidden)?)
        };
        Ok(Embedding {
            matrix,
            scale: self.scale,
        })
    }
}

/// The embedding table and the factor its rows are scaled by.
#[derive(Debug, Clone)]
pub struct Embedding<B: Backend> {
    matrix: Matrix<B>,
    scale: Option<f32>,
}

/// The embedding matrix, kept in whichever orientation the model stores it once.
#[derive(Debug, Clone)]
pub enum Matrix<B: Backend> {
    /// `[vocab, hidden]`, as in the checkpoint (untied output projection).
    Rows(Tensor<B, 2>),
    /// `[hidden, vocab]`: the transposed matrix shared with a tied output projection, so the
    /// weights are held once.
    Columns(Tensor<B, 2>),
    /// `[vocab, hidden]` as the checkpoint's bytes (CPU backends): rows are widened when
    /// looked up, and a tied output projection multiplies by the same bytes.
    Bytes {
        /// The matrix, in the checkpoint's dtype.
        weights: Weights,
        /// Whether the output projection is this matrix.
        tied: bool,
    },
}

impl<B: Backend> Embedding<B> {
    /// The embeddings of `ids`.
    ///
    /// # Shapes
    /// `ids`: `[n]` → `[n, hidden]`.
    pub fn forward(&self, ids: Tensor<B, 1, Int>) -> Tensor<B, 2> {
        let x = match &self.matrix {
            Matrix::Rows(w) => w.clone().select(0, ids),
            Matrix::Columns(w) => w.clone().select(1, ids).transpose(),
            Matrix::Bytes { weights, .. } => {
                let device = ids.device();
                let ids = ids.into_data().convert::<i64>().to_vec::<i64>();
                let ids = ids.expect("converted to i64");
                let view = weights.view();
                let rows: Vec<f32> = ids
                    .iter()
                    .flat_map(|&id| view.row_f32(usize::try_from(id).expect("a token id")))
                    .collect();
                Tensor::from_data(TensorData::new(rows, [ids.len(), view.k()]), &device)
            }
        };
        match self.scale {
            Some(s) => x.mul_scalar(s),
            None => x,
        }
    }

    /// The output projection sharing this matrix (tied embeddings), or `None` when the
    /// matrix is stored as rows (the model has its own `lm_head`).
    pub fn tied_output(&self) -> Option<Linear<B>> {
        match &self.matrix {
            Matrix::Rows(_) | Matrix::Bytes { tied: false, .. } => None,
            Matrix::Columns(w) => Some(Linear::from_transposed(w.clone())),
            Matrix::Bytes {
                weights,
                tied: true,
            } => Some(Linear::from_weights(weights.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use burn_flex::{Flex, FlexDevice};

    use super::{EmbeddingConfig, Matrix};
    use crate::hf::Checkpoint;
    use crate::model::loader::Loader;

    #[test]
    fn a_tied_output_on_the_host_reads_the_embedding_bytes() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/models/llama-gqa-tied");
        let checkpoint = Checkpoint::open(&dir).unwrap();
        let (_, _, shape) = checkpoint
            .shapes()
            .find(|(_, name, _)| *name == "model.embed_tokens.weight")
            .unwrap();
        let config = EmbeddingConfig {
            vocab_size: shape[0],
            hidden_size: shape[1],
            tied: true,
            scale: None,
        };
        let embedding = config
            .load(
                &Loader::<Flex>::new(&checkpoint, &FlexDevice, crate::model::Kernels::Host),
                "model.embed_tokens",
            )
            .unwrap();
        let Matrix::Bytes { weights, .. } = &embedding.matrix else {
            panic!("flex keeps the embedding as the checkpoint's bytes");
        };
        let output = embedding.tied_output().unwrap();
        assert!(output.host().unwrap().weights().shares_bytes_with(weights));
    }
}
