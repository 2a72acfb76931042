//! `dry(multiplier, base, allowed_length, last_n, breakers)`: llama.cpp's DRY ("Don't Repeat
//! Yourself") repetition penalty, a sieve plugin.
//!
//! # Formula
//! Let `W` be the last `last_n` tokens of the history (`-1`: all of it; the prompt counts, as
//! in llama.cpp's server, which accepts the prompt tokens). If `|W| <= allowed_length`,
//! nothing happens. Otherwise:
//! 1. **Restart limit** `R`: scanning back from the last token, the first position where a
//!    sequence breaker occurs (its head token followed by its whole tail, see
//!    [`breakers`]); `R` = the number of tokens after it (`|W|` if none). If
//!    `R < allowed_length`, nothing happens.
//! 2. **Repeat counts** (reverse Z-algorithm, `O(|W|)`): `c_j` = the length of the longest
//!    suffix of `W` that also ends at position `j`, capped at `R`.
//! 3. For every `j` with `c_j >= allowed_length`, the token `W[j+1]` would extend a repeat of
//!    length `c_j`; `L_t` = the largest such `c_j` for each token `t`.
//! 4. Every candidate `t` with an `L_t`, unless `t` is a single-token breaker:
//!    `l_t ← l_t − multiplier · base^e`, `e = L_t − allowed_length`, capped at
//!    `⌊88.7228391 / ln(base)⌋` when `base > 1.000001` (so `base^e` stays a finite `f32`).
//!
//! The arithmetic follows llama.cpp's types: `multiplier` and `base` are `f32`, `base^e` is
//! computed in `f64` (`std::pow(float, int)`), the penalty rounded to `f32`, subtracted in
//! `f32`.
//!
//! # Reference
//! p-e-w's DRY (oobabooga text-generation-webui PR #5677) as ported to llama.cpp
//! (`llama_sampler_dry`, PR #9702, from koboldcpp PR #982).
//!
//! # Parameters and deliberate differences
//! - `multiplier` (0.8; llama.cpp's default 0 means off): `0` makes the stage an identity.
//!   Must be `>= 0`.
//! - `base` (1.75): must be `>= 1`. llama.cpp silently disables DRY for `base < 1`; here such
//!   a base is refused with its valid range, as a likely mistake.
//! - `allowed_length` (2): repeats up to this length are free. `0` is allowed, as in
//!   llama.cpp, and penalizes every token that ever followed another.
//! - `last_n` (-1): the window; `-1` is the whole history (llama.cpp: the context size),
//!   `0` makes the stage an identity.
//! - `breakers` (`["\n", ":", "\"", "*"]`): strings, resolved through the model's vocabulary
//!   when the stage is built (an error without one: give token ids then), or lists of token
//!   ids `[head, tail…]`, which work without a vocabulary (as `sieve apply` runs). See
//!   [`breakers`] for how strings become tokens, and the one approximation there (the tail of
//!   a multi-token breaker is split greedily, as the plugin has no tokenizer). At most
//!   [`breakers::MAX_BREAKERS`] breakers (each string costs one pass over the vocabulary to
//!   build); repeated ones are kept once.
//! - The stage reads the history from the step context on every call; it keeps no state, so
//!   `accept` and `reset` have nothing to do.
//!
//! # Cost
//! `O(|W|)` for the scans plus, on a full vocabulary, one write per penalized token.

use sieve_plugin::{
    BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage, Value, Vocab,
};

pub mod breakers;
pub mod repeats;

use breakers::Breakers;
use repeats::{repeat_counts, restart_limit};

/// `ln(f32::MAX)`, llama.cpp's `FLOAT_MAX_LOG`.
const FLOAT_MAX_LOG: f32 = 88.722_84;

/// The `dry` stage.
#[derive(Debug, Clone)]
pub struct Dry {
    multiplier: f32,
    base: f32,
    allowed_length: usize,
    /// `None`: the whole history.
    last_n: Option<usize>,
    breakers: Breakers,
    /// The cap on the exponent; 0 for none.
    max_exponent: i64,
    /// Scratch: repeat counts of the window.
    counts: Vec<usize>,
    /// Scratch: `(token, longest repeat it would extend)`, by ascending token.
    lengths: Vec<(u32, usize)>,
}

/// One entry of `breakers`.
#[derive(Debug, Clone, PartialEq)]
pub enum Breaker {
    /// Text, resolved through the vocabulary.
    Text(String),
    /// Token ids: the head, then the tail.
    Ids(Vec<u32>),
}

impl Breaker {
    /// Reads breaker `i` of the `breakers` list: a string, or a list of token ids.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on `breakers` for any other value.
    pub fn read(i: usize, value: &Value) -> Result<Breaker, Error> {
        let wrong = |what: &Value| {
            invalid(
                "breakers",
                format!(
                    "breaker {i} must be a string or a list of token ids, found {}",
                    what.type_name()
                ),
            )
        };
        match value {
            Value::Str(s) => Ok(Breaker::Text(s.clone())),
            Value::List(items) => items
                .iter()
                .map(|item| match item {
                    Value::Int(id) => u32::try_from(*id).map_err(|_| {
                        invalid("breakers", format!("breaker {i}: {id} is not a token id"))
                    }),
                    other => Err(wrong(other)),
                })
                .collect::<Result<Vec<u32>, Error>>()
                .map(Breaker::Ids),
            other => Err(wrong(other)),
        }
    }
}

/// The parameters of `dry`.
#[derive(Debug, Params)]
pub struct DryParams {
    /// penalty scale; 0 turns DRY off
    #[param(default = 0.8, range = Range::at_least(0.0))]
    pub multiplier: f64,
    /// growth of the penalty per extra repeated token
    #[param(default = 1.75, range = Range::at_least(1.0))]
    pub base: f64,
    /// longest repeat left unpenalized
    #[param(default = 2, range = Range::closed(0.0, f64::from(u32::MAX)))]
    pub allowed_length: u32,
    /// history tokens scanned; -1 = all, 0 = off
    #[param(default = -1, range = Range::closed(-1.0, f64::from(u32::MAX)))]
    pub last_n: i64,
    /// strings (need a model's vocabulary) or token-id lists [head, tail…] that end a repeat
    #[param(default = ["\n", ":", "\"", "*"].iter().map(|s| Value::Str((*s).into())).collect())]
    pub breakers: Vec<Value>,
}

fn invalid(param: &str, message: String) -> Error {
    Error::InvalidArgument {
        stage: "dry".into(),
        param: param.into(),
        message,
    }
}

/// Resolves the breakers, through `vocab` for strings.
fn resolve(list: &[Breaker], vocab: Option<&Vocab>) -> Result<Breakers, Error> {
    if list.len() > breakers::MAX_BREAKERS {
        return Err(invalid(
            "breakers",
            format!(
                "{} breakers given; at most {} are accepted",
                list.len(),
                breakers::MAX_BREAKERS
            ),
        ));
    }
    let mut out = Breakers::new();
    for (i, b) in list.iter().enumerate() {
        match b {
            Breaker::Text(s) if s.is_empty() => {
                return Err(invalid(
                    "breakers",
                    format!("breaker {i} is an empty string"),
                ))
            }
            Breaker::Ids(ids) if ids.is_empty() => {
                return Err(invalid("breakers", format!("breaker {i} is an empty list")))
            }
            Breaker::Text(s) => {
                let vocab = vocab.ok_or_else(|| {
                    invalid(
                        "breakers",
                        format!(
                            "breaker {i} ({}) is text, which needs the model's vocabulary, and \
                             none is loaded (as in `sieve apply`); give breakers as lists of \
                             token ids instead, e.g. breakers=[[13], [25, 26]], or breakers=[]",
                            Value::Str(s.clone())
                        ),
                    )
                })?;
                out.add_text(s.as_bytes(), vocab);
            }
            Breaker::Ids(ids) => {
                if let Some(v) = vocab {
                    if let Some(&bad) = ids.iter().find(|&&id| id as usize >= v.len()) {
                        return Err(invalid(
                            "breakers",
                            format!(
                                "breaker {i}: token {bad} is outside the vocabulary of {} tokens",
                                v.len()
                            ),
                        ));
                    }
                }
                out.add_ids(ids);
            }
        }
    }
    Ok(out)
}

impl Dry {
    /// A stage with these parameters and resolved breakers.
    pub fn new(
        multiplier: f32,
        base: f32,
        allowed_length: usize,
        last_n: Option<usize>,
        breakers: Breakers,
    ) -> Self {
        let max_exponent = if base > 1.000_001 {
            (FLOAT_MAX_LOG / base.ln()) as i64
        } else {
            0
        };
        Dry {
            multiplier,
            base,
            allowed_length,
            last_n,
            breakers,
            max_exponent,
            counts: Vec::new(),
            lengths: Vec::new(),
        }
    }

    /// The penalty for extending a repeat of `len >= allowed_length` tokens.
    pub fn penalty(&self, len: usize) -> f32 {
        let mut e = (len - self.allowed_length) as i64;
        if self.max_exponent > 0 && e > self.max_exponent {
            e = self.max_exponent;
        }
        (f64::from(self.multiplier) * f64::from(self.base).powf(e as f64)) as f32
    }

    /// Fills `lengths` for `history`; false when nothing is to be penalized.
    fn find_repeats(&mut self, history: &[u32]) -> bool {
        let n = self.last_n.map_or(history.len(), |l| l.min(history.len()));
        if self.multiplier == 0.0 || n <= self.allowed_length {
            return false;
        }
        let window = &history[history.len() - n..];
        let limit = restart_limit(window, &self.breakers);
        if limit < self.allowed_length {
            return false;
        }
        repeat_counts(window, limit, &mut self.counts);
        self.lengths.clear();
        for (j, &len) in self.counts[..n - 1].iter().enumerate() {
            let next = window[j + 1];
            if len >= self.allowed_length && !self.breakers.is_single_token(next) {
                self.lengths.push((next, len));
            }
        }
        // Longest first within each token, then keep the first of each.
        self.lengths
            .sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        self.lengths.dedup_by_key(|&mut (t, _)| t);
        !self.lengths.is_empty()
    }
}

impl Sampler for Dry {
    fn apply(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
        if !self.find_repeats(cx.history) {
            return Ok(());
        }
        let this = &*self;
        if candidates.is_dense() {
            for &(t, len) in &this.lengths {
                let i = t as usize;
                if i < candidates.len() {
                    candidates.set_logit(i, candidates.logit(i) - this.penalty(len));
                }
            }
        } else {
            let (ids, logits) = candidates.parts_mut();
            for (id, l) in ids.iter().zip(logits.iter_mut()) {
                if let Ok(k) = this.lengths.binary_search_by_key(id, |&(t, _)| t) {
                    *l -= this.penalty(this.lengths[k].1);
                }
            }
        }
        Ok(())
    }
}

impl Stage for Dry {
    type Params = DryParams;
    const NAME: &'static str = "dry";
    const DOC: &'static str = "DRY repetition penalty: penalize tokens that extend a repeat of the history (llama.cpp dry)";

    fn new(p: DryParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        let list = p
            .breakers
            .iter()
            .enumerate()
            .map(|(i, v)| Breaker::read(i, v))
            .collect::<Result<Vec<Breaker>, Error>>()?;
        let breakers = resolve(&list, cx.vocab)?;
        let last_n = usize::try_from(p.last_n).ok();
        Ok(Dry::new(
            p.multiplier as f32,
            p.base as f32,
            p.allowed_length as usize,
            last_n,
            breakers,
        ))
    }
}

sieve_plugin::export_plugin!(
    name = "dry",
    version = env!("CARGO_PKG_VERSION"),
    stages = [Dry]
);

#[cfg(test)]
mod tests;
