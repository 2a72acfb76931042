//! `sieve bench`: timings a user can quote, with the floor beside them.
//!
//! - [`sampler`]: a pipeline per token against one read of the logits, on the [`workload`]
//!   the criterion benches time too;
//! - [`model`]: a model's prefill and decode speed.

pub mod bandwidth;
pub mod model;
pub mod sampler;
pub mod speculative;
pub mod workload;

use clap::Subcommand;

/// `sieve bench …`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time a pipeline per token against the floor (one read of the logits)
    #[command(
        after_help = "Example:\n  sieve bench sampler --sampler \"top_k(40) | top_p(0.9)\" --vocab 128256 --iters 500"
    )]
    Sampler(sampler::BenchSamplerArgs),
    /// Time a model: prefill tokens/s, decode tokens/s (median step), time to first token
    #[command(
        after_help = "Example:\n  sieve bench model --model ./SmolLM2-135M --prompt-len 256 --gen 32"
    )]
    Model(model::BenchModelArgs),
}
