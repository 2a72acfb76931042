//! # sieve-engine
//!
//! The generation loop of sieve, with no tensor library: it joins a [`LanguageModel`] (any
//! source of next-token logits) to a `sieve_core::Pipeline` and streams text through a
//! [`Detokenize`].
//!
//! ```text
//!          prompt ids
//!              │
//!              ▼
//! LanguageModel::forward ─► logits ─► Candidates ─► Pipeline (stages, selector) ─► token
//!              ▲                                                                    │
//!              └──────────── token ◄── accept() ◄───────────────────────────────────┤
//!                                                                                   ▼
//!          EOS? ◄── IncrementalDecoder (complete UTF-8) ─► StopStrings (hold-back) ─► on_text
//! ```
//!
//! - [`model`]: the seams, [`LanguageModel`] and [`Detokenize`];
//! - [`batch`]: the multi-sequence seam, [`BatchModel`] (open, fork, truncate, one step over
//!   many sequences) and [`Sequence`], one of its sequences as a [`LanguageModel`];
//! - [`generate()`](fn@generate) with [`GenerateOptions`], returning a [`Generation`];
//! - [`emit`]: [`Emitter`], one sequence's chosen tokens → EOS, limits, stop strings and
//!   streamed text, shared by every generation mode;
//! - [`parallel`]: [`generate_parallel`], K samples of one prompt decoded in one batch;
//! - [`beam`]: [`beam_search`], transformers' beam search over forked sequences;
//! - [`conversation`]: [`Conversation`], a model's KV cache kept between the turns of a chat
//!   (only the new part of each prompt is prefilled);
//! - [`detok`]: [`IncrementalDecoder`], UTF-8-safe incremental decoding;
//! - [`stop`]: [`StopStrings`], matching and hold-back;
//! - [`stats`]: [`GenerationStats`], [`FinishReason`], and the helpers every speed report
//!   uses ([`tokens_per_second`], [`Summary`]);
//! - [`speculative`]: [`generate_speculative`], speculative decoding with a draft model or
//!   prompt lookup (Leviathan et al. 2023), exact for `greedy` and `dist` pipelines;
//! - [`chi_square`]: Pearson's chi-square tests (homogeneity, goodness of fit) that the
//!   distribution tests use;
//! - [`bench`](mod@bench): [`time_model`], a model's prefill and decode speed without a sampler;
//! - [`scheduler`]: [`Scheduler`], continuous batching of many requests on one model (the
//!   server's engine);
//! - [`step`]: the decode step every mode shares: [`check_prompt`] (the one prompt check, for
//!   the front ends too), [`load_row`] (a row of logits into candidates, with the length and
//!   NaN checks), [`Decoder`] (pipeline, accept, [`Emitter`]) for the sampling modes and
//!   [`Scorer`] (log-softmax, stages but the selector) for beam search; the module's table
//!   says which mode uses which part.
//!
//! The model side (a Burn transformer, the Hugging Face loader) lives in `sieve-backends` and
//! the text side (the tokenizer, chat templates) in `sieve-text`, which implement these traits;
//! this crate depends on `sieve-core` alone, so its tests drive the loop with canned logits
//! and a byte table.
#![warn(missing_docs)]

pub mod batch;
pub mod beam;
pub mod bench;
pub mod chi_square;
pub mod conversation;
pub mod detok;
pub mod emit;
mod error;
pub mod generate;
pub mod model;
pub mod parallel;
pub mod scheduler;
pub mod speculative;
pub mod stats;
pub mod step;
pub mod step_stats;
pub mod stop;
#[cfg(feature = "testing")]
pub mod testing;

pub use batch::{BatchModel, Feed, LogitsAt, SeqId, Sequence};
pub use beam::{beam_search, BeamOptions, BeamSearch, EarlyStopping, Hypothesis};
pub use bench::{time_batches, time_model, BatchPrompts, BatchTimings, ModelTimings};
pub use conversation::{Conversation, Reusing};
pub use detok::IncrementalDecoder;
pub use emit::{Emitter, EndRules};
pub use error::{BeamOptionsError, BoxError, Error, Result};
pub use generate::{generate, GenerateOptions, Generation};
pub use model::{Detokenize, LanguageModel, SkipSpecial};
pub use parallel::generate_parallel;
pub use scheduler::{Scheduler, SchedulerConfig};
pub use speculative::{generate_speculative, Drafter, SpeculativeOptions, SpeculativeStats};
pub use stats::{tokens_per_second, FinishReason, GenerationStats, Summary};
pub use step::{check_prompt, check_row, load_row, log_softmax, Decoder, Sampled, Scorer};
pub use step_stats::StepStats;
pub use stop::{StopMatch, StopStrings};
