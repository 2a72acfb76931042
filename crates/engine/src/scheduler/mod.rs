//! Serving many requests at once: a continuous-batching [`Scheduler`] that owns a
//! [`BatchModel`](crate::BatchModel) on its own thread.
//!
//! ```text
//!  handlers ──submit(Request)──► channel ──► worker thread (owns the model)
//!     ▲                                        │ each loop turn:
//!     │                                        │  1. take new requests (queue of at most max_queue)
//!     │                                        │  2. drop requests whose client has gone
//!     │                                        │  3. admit waiting requests while their n choices fit in `parallel`
//!     │                                        │  4. one step: every decoding choice's last token
//!     │                                        │     + the next prompt chunks (≤ prefill_chunk tokens)
//!     └──── Event::Token / Finished / Failed ◄─┘  5. each choice samples with its own pipeline
//! ```
//!
//! - Requests join between steps; a long prompt is read `prefill_chunk` tokens per step, so
//!   the streams already running keep getting a token every step.
//! - A request of `n` choices prefills its prompt once; choice 0 decodes on the prompt's
//!   sequence, the others on forks of it ([`BatchModel::fork`](crate::BatchModel::fork)).
//! - Every choice has its own [`Pipeline`](sieve_core::Pipeline) (its stage state and random
//!   stream: the caller builds choice `i` with seed `seed + i`) and its own
//!   [`Emitter`](crate::Emitter) (EOS, limits, stop strings, incremental text). Since the
//!   model is batch invariant, each choice gives exactly the tokens of a plain
//!   [`generate()`](fn@crate::generate) with its pipeline, whatever else runs beside it.
//! - A request whose [`EventSink`] reports its client gone is dropped before the next step
//!   and its sequences are closed at once.
//! - A model or stage failure fails only the request it belongs to: a failed step changes
//!   nothing, so the scheduler re-runs its feeds one by one to find whose it was.

mod choice;
mod handle;
pub mod logprobs;
mod request;
mod shared;
mod worker;

pub use handle::{Scheduler, SchedulerConfig, Status};
pub use request::{
    ChannelSink, Event, EventSink, FailureCause, LogprobMode, LogprobsSpec, Request, TokenLogprobs,
};
