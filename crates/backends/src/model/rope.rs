//! Rotary position embedding (RoFormer, Su et al. 2021, arXiv:2104.09864) in the half-split
//! layout of transformers (`rotate_half`): dimension `i` is paired with `i + d/2`, not with its
//! neighbour as in Burn's `RotaryEncoding` or Meta's original code.
//!
//! We implement the half-split form directly rather than permuting the q/k weights at load,
//! so the checkpoint's tensors are used exactly as stored. The inverse frequencies are computed
//! in `f32` the way transformers does (`1 / θ^(2i/d)`, then the `linear` or `llama3` rescaling
//! of `ROPE_INIT_FUNCTIONS`); angles are `position · inv_freq` in `f32`, their cosine and sine
//! are taken in `f64` and rounded.
//!
//! [`RopeConfig`] → [`Rope`] → [`RopeTables`] per forward pass.

use burn_tensor::backend::Backend;
use burn_tensor::{Tensor, TensorData};

/// How RoPE frequencies are rescaled for longer contexts (transformers'
/// `ROPE_INIT_FUNCTIONS`); the attention factor of these kinds is always 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RopeScaling {
    /// Plain RoPE.
    None,
    /// `linear`: every inverse frequency is divided by `factor` (positions are interpolated).
    Linear {
        /// The divisor.
        factor: f64,
    },
    /// `llama3` (Llama 3.1/3.2): low frequencies divided by `factor`, high ones kept, the band
    /// between smoothly interpolated.
    Llama3 {
        /// Divisor of the low frequencies.
        factor: f64,
        /// Wavelengths above `original_max_position_embeddings / low_freq_factor` are scaled.
        low_freq_factor: f64,
        /// Wavelengths below `original_max_position_embeddings / high_freq_factor` are kept.
        high_freq_factor: f64,
        /// The context length the model was pre-trained with.
        original_max_position_embeddings: f64,
    },
}

/// The rotary embedding of one head size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeConfig {
    /// Width of one head (even).
    pub head_dim: usize,
    /// The base θ (`rope_theta`).
    pub theta: f64,
    /// The frequency scaling.
    pub scaling: RopeScaling,
}

impl RopeConfig {
    /// The inverse frequencies of this configuration.
    pub fn init(&self) -> Rope {
        Rope::new(self.head_dim, self.theta, self.scaling)
    }
}

/// The inverse frequencies of one head, and the tables built from them on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// `head_dim / 2` inverse frequencies.
    inv_freq: Vec<f32>,
}

/// Cosine and sine for a run of positions, `[n, head_dim]` each, with each half repeated (as
/// transformers' `cat((freqs, freqs))`).
#[derive(Debug, Clone)]
pub struct RopeTables<B: Backend> {
    /// `[1, n, head_dim]`.
    cos: Tensor<B, 3>,
    /// `[1, n, head_dim]`.
    sin: Tensor<B, 3>,
    /// The same cosines on the host, `[n, head_dim]` row-major.
    host_cos: Vec<f32>,
    /// The same sines on the host, `[n, head_dim]` row-major.
    host_sin: Vec<f32>,
}

impl Rope {
    /// The frequencies for heads of `head_dim` (even) with base `theta` and `scaling`.
    fn new(head_dim: usize, theta: f64, scaling: RopeScaling) -> Self {
        let base = theta as f32;
        let dim = head_dim as f32;
        let default: Vec<f32> = (0..head_dim / 2)
            .map(|i| 1.0 / base.powf((2 * i) as f32 / dim))
            .collect();
        let inv_freq = match scaling {
            RopeScaling::None => default,
            RopeScaling::Linear { factor } => {
                default.into_iter().map(|f| f / factor as f32).collect()
            }
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                let (factor, low, high) = (
                    factor as f32,
                    low_freq_factor as f32,
                    high_freq_factor as f32,
                );
                let old_len = original_max_position_embeddings as f32;
                let low_freq_wavelen = old_len / low;
                let high_freq_wavelen = old_len / high;
                default
                    .into_iter()
                    .map(|f| {
                        let wavelen = 2.0 * std::f32::consts::PI / f;
                        let scaled = if wavelen > low_freq_wavelen {
                            f / factor
                        } else {
                            f
                        };
                        if wavelen < high_freq_wavelen || wavelen > low_freq_wavelen {
                            scaled
                        } else {
                            let smooth = (old_len / wavelen - low) / (high - low);
                            (1.0 - smooth) * scaled / factor + smooth * scaled
                        }
                    })
                    .collect()
            }
        };
        Rope { inv_freq }
    }

    /// The inverse frequencies (`head_dim / 2` of them).
    pub fn inv_freq(&self) -> &[f32] {
        &self.inv_freq
    }

    /// The tables for positions `start .. start + n`.
    pub fn tables<B: Backend>(&self, start: usize, n: usize, device: &B::Device) -> RopeTables<B> {
        let half = self.inv_freq.len();
        let d = 2 * half;
        let mut cos = vec![0f32; n * d];
        let mut sin = vec![0f32; n * d];
        for p in 0..n {
            let pos = (start + p) as f32;
            for (i, &f) in self.inv_freq.iter().enumerate() {
                let angle = f64::from(pos * f);
                let (s, c) = (angle.sin() as f32, angle.cos() as f32);
                cos[p * d + i] = c;
                cos[p * d + half + i] = c;
                sin[p * d + i] = s;
                sin[p * d + half + i] = s;
            }
        }
        RopeTables {
            cos: Tensor::from_data(TensorData::new(cos.clone(), [1, n, d]), device),
            sin: Tensor::from_data(TensorData::new(sin.clone(), [1, n, d]), device),
            host_cos: cos,
            host_sin: sin,
        }
    }
}

impl<B: Backend> RopeTables<B> {
    /// Rotates `x` by the positions of these tables: `x·cos + rotate_half(x)·sin`, where
    /// `rotate_half([x₁, x₂]) = [−x₂, x₁]` splits the head dimension in halves.
    ///
    /// # Shapes
    /// `x`: `[heads, n, head_dim]` → the same.
    pub fn apply(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let [_, _, d] = x.dims();
        let half = d / 2;
        let x1 = x.clone().narrow(2, 0, half);
        let x2 = x.clone().narrow(2, half, half);
        let rotated = Tensor::cat(vec![x2.neg(), x1], 2);
        x * self.cos.clone() + rotated * self.sin.clone()
    }

    /// [`RopeTables::apply`] in place on host rows: `x` is `[n, heads, head_dim]` row-major
    /// (a projection's output as it comes), position `p`'s row rotated by table row `p`. The
    /// same two products and one sum per element as [`RopeTables::apply`], so the same bits.
    ///
    /// # Panics
    /// If `x` is not `[n, heads, head_dim]` for these tables' `n` and `head_dim`.
    pub fn apply_host(&self, x: &mut [f32], heads: usize) {
        let [_, n, d] = self.cos.dims();
        assert_eq!(x.len(), n * heads * d, "rope: x is not [{n}, {heads}, {d}]");
        let half = d / 2;
        let tables = self
            .host_cos
            .chunks_exact(d)
            .zip(self.host_sin.chunks_exact(d));
        for (row, (cos, sin)) in x.chunks_exact_mut(heads * d).zip(tables) {
            for head in row.chunks_exact_mut(d) {
                let (x1, x2) = head.split_at_mut(half);
                for i in 0..half {
                    let (a, b) = (x1[i], x2[i]);
                    x1[i] = a * cos[i] + -b * sin[i];
                    x2[i] = b * cos[half + i] + a * sin[half + i];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_frequencies_follow_theta() {
        let r = Rope::new(8, 10000.0, RopeScaling::None);
        let expected = [1.0, 0.1, 0.01, 0.001];
        for (a, b) in r.inv_freq().iter().zip(expected) {
            assert!((a - b).abs() <= 1e-6 * b, "{a} vs {b}");
        }
    }

    #[test]
    fn linear_scaling_divides_every_frequency() {
        let plain = Rope::new(16, 10000.0, RopeScaling::None);
        let scaled = Rope::new(16, 10000.0, RopeScaling::Linear { factor: 4.0 });
        for (a, b) in plain.inv_freq().iter().zip(scaled.inv_freq()) {
            assert_eq!(a / 4.0, *b);
        }
    }

    #[test]
    fn llama3_scaling_keeps_high_divides_low_and_blends_the_middle() {
        // Wavelengths 2π/f for θ=10000, d=16: 6.3, 20, 63, 199, 628, 1987, 6283, 19869.
        let s = RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 1024.0,
        };
        let plain = Rope::new(16, 10000.0, RopeScaling::None);
        let scaled = Rope::new(16, 10000.0, s);
        let (p, q) = (plain.inv_freq(), scaled.inv_freq());
        // High frequencies (wavelength < 1024/4 = 256) are kept.
        assert_eq!(&p[..4], &q[..4]);
        // Low frequencies (wavelength > 1024) are divided by the factor.
        for i in 5..8 {
            assert_eq!(q[i], p[i] / 8.0);
        }
        // Wavelength 628 lies in the band: between the two.
        assert!(q[4] < p[4] && q[4] > p[4] / 8.0);
    }
}
