//! `logit_bias(biases)`: add a fixed bias to chosen tokens' logits.
//!
//! # Formula
//! `l_t ← l_t + b_t` for every token `t` in `biases = {t: b_t, …}`; `b_t = -inf` bans `t`.
//!
//! # Reference
//! llama.cpp `llama_sampler_logit_bias` (`--logit-bias TOKEN_ID(+/-)BIAS`); the OpenAI
//! `logit_bias` request field.
//!
//! # Keys and values
//! - A key is a token id (a non-negative integer) or a token's text (a string), resolved when the
//!   stage is built with [`Vocab::find`](sieve_core::Vocab::find): the exact bytes of one token. String keys need a
//!   vocabulary (a loaded tokenizer); a string that is not exactly one token is an error (bias its
//!   tokens by id instead).
//! - A value is a number; `-inf` bans the token, `+inf` and NaN are errors, and so are finite
//!   values beyond the `f32` range.
//! - Keys that name the same token (twice the same id, or an id and its text) **add up**, as
//!   llama.cpp's bias list and HF's `SequenceBiasLogitsProcessor` do; a total of 0 is dropped.
//! - When the vocabulary is known, an id outside it is an error; otherwise ids beyond the
//!   candidates' vocabulary are ignored when the stage runs.
//!
//! # Edge cases
//! - The empty map (or only zero totals) is the neutral value: the stage is an identity.
//! - A sum that overflows `f32` saturates to `f32::MAX`; a masked token stays masked.
//! - Cost: on dense candidates one direct write per bias; on sparse ones each candidate is
//!   looked up by binary search in the (sorted) biases, `O(n log b)`. Unlike llama.cpp, the
//!   stage clears the `sorted` flag, as biases can reorder tokens.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use sieve_core::{
    math, BuildContext, Candidates, Context, Error, Footprint, Params, Sampler, Stage, Value,
};

/// The `logit_bias` stage.
#[derive(Debug, Clone, Default)]
pub struct LogitBias {
    /// `(id, bias)` by ascending id, ids distinct, biases non-zero and never `+inf`/NaN.
    biases: Vec<(u32, f32)>,
}

fn bias_error(message: String) -> Error {
    Error::InvalidArgument {
        stage: "logit_bias".into(),
        param: "biases".into(),
        message,
    }
}

fn out_of_range(id: u32, bias: f64) -> Error {
    bias_error(format!(
        "token {id}: bias {bias} is beyond the f32 range; use -inf to ban a token"
    ))
}

impl LogitBias {
    /// A stage adding `bias` to token `id` for every pair; biases of the same id add up.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a bias is `+inf` or NaN, or a token's total is not
    /// representable as an `f32` logit bias (finite beyond `f32::MAX`, or `+inf`).
    pub fn new(biases: &[(u32, f64)]) -> Result<Self, Error> {
        for &(id, b) in biases {
            if b.is_nan() || b == f64::INFINITY {
                return Err(bias_error(format!(
                    "token {id}: bias {b} is not allowed; use -inf to ban a token"
                )));
            }
            if b.is_finite() && libm::fabs(b) > f32::MAX as f64 {
                return Err(out_of_range(id, b));
            }
        }
        let mut sorted = biases.to_vec();
        sorted.sort_by_key(|&(id, _)| id);
        let mut merged: Vec<(u32, f64)> = Vec::with_capacity(sorted.len());
        for (id, b) in sorted {
            match merged.last_mut() {
                Some((last, total)) if *last == id => *total += b,
                _ => merged.push((id, b)),
            }
        }
        let mut out = Vec::with_capacity(merged.len());
        for (id, total) in merged {
            // Every term is -inf or within the f32 range, so the f64 total is -inf or finite.
            let b = total as f32;
            if total.is_finite() && !b.is_finite() {
                return Err(out_of_range(id, total));
            }
            if b != 0.0 {
                out.push((id, b));
            }
        }
        Ok(LogitBias { biases: out })
    }

    /// The merged `(id, bias)` pairs, by ascending id.
    pub fn biases(&self) -> &[(u32, f32)] {
        &self.biases
    }

    /// Builds the stage from a `{key: bias}` map, resolving string keys through the vocabulary.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key that is neither a non-negative integer nor a
    /// string, a string key without a vocabulary or that is not one token, an id outside a known
    /// vocabulary, or a value that is not a number or is `+inf`/NaN.
    pub fn from_map(entries: &[(Value, Value)], cx: &BuildContext<'_>) -> Result<Self, Error> {
        let mut pairs = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let id = resolve_key(key, cx)?;
            let bias = value.as_f64().ok_or_else(|| {
                bias_error(format!(
                    "the bias of {key} must be a number, found {}",
                    value.type_name()
                ))
            })?;
            pairs.push((id, bias));
        }
        LogitBias::new(&pairs)
    }
}

/// The token id a map key names.
fn resolve_key(key: &Value, cx: &BuildContext<'_>) -> Result<u32, Error> {
    let id = match key {
        Value::Int(i) => u32::try_from(*i).map_err(|_| {
            bias_error(format!(
                "key {i} is not a token id (ids are 0 to {})",
                u32::MAX
            ))
        })?,
        Value::Str(text) => {
            let vocab = cx.vocab.ok_or_else(|| {
                bias_error(format!(
                    "key {key} is token text, which needs a tokenizer (load a model); \
                         without one, use token ids"
                ))
            })?;
            return vocab.find(text.as_bytes()).ok_or_else(|| {
                bias_error(format!(
                    "key {key} is not the text of a single token; bias its tokens by id"
                ))
            });
        }
        other => {
            return Err(bias_error(format!(
                "key {other} must be a token id or a token's text, found {}",
                other.type_name()
            )))
        }
    };
    match cx.vocab {
        Some(vocab) if id as usize >= vocab.len() => Err(bias_error(format!(
            "token id {id} is outside the vocabulary of {} tokens",
            vocab.len()
        ))),
        _ => Ok(id),
    }
}

impl Sampler for LogitBias {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.biases.is_empty() || candidates.is_empty() {
            return Ok(());
        }
        if candidates.is_dense() {
            for &(id, b) in &self.biases {
                let i = id as usize;
                if i < candidates.len() {
                    candidates.set_logit(i, math::sanitize(candidates.logit(i) + b));
                }
            }
        } else {
            let (ids, logits) = candidates.parts_mut();
            for (id, l) in ids.iter().zip(logits.iter_mut()) {
                if let Ok(j) = self.biases.binary_search_by_key(id, |&(t, _)| t) {
                    *l = math::sanitize(*l + self.biases[j].1);
                }
            }
        }
        Ok(())
    }

    /// The biased tokens.
    fn footprint(&mut self, _cx: &Context<'_>, touched: &mut Vec<u32>) -> Footprint {
        if self.biases.is_empty() {
            return Footprint::Nothing;
        }
        touched.extend(self.biases.iter().map(|&(id, _)| id));
        Footprint::Tokens
    }
}

/// The parameters of `logit_bias`.
#[derive(Debug, Clone, Params)]
pub struct LogitBiasParams {
    /// {token id or token text: bias}; -inf bans; repeated tokens add up
    pub biases: Vec<(Value, Value)>,
}

impl Stage for LogitBias {
    const NAME: &'static str = "logit_bias";
    const DOC: &'static str =
        "add a bias to chosen tokens' logits ({id or \"text\": bias}; -inf bans)";
    type Params = LogitBiasParams;
    fn new(p: LogitBiasParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        LogitBias::from_map(&p.biases, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::Vocab;

    fn args(entries: Vec<(Value, Value)>) -> sieve_core::Args {
        sieve_core::Args::new("logit_bias", vec![("biases".into(), Value::Map(entries))])
    }

    fn build(entries: Vec<(Value, Value)>, vocab: Option<&Vocab>) -> Result<LogitBias, Error> {
        LogitBias::from_map(&entries, &BuildContext { seed: 0, vocab })
    }

    fn vocab() -> Vocab {
        let tokens = ["a", "b", "Hello", "c", "Hello"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        Vocab::new(tokens, vec![])
    }

    fn run(stage: &mut LogitBias, logits: &[f32]) -> Vec<(u32, f32)> {
        let mut c = Candidates::from_logits(logits);
        stage.apply(&mut c, &Context::default()).unwrap();
        c.iter().collect()
    }

    fn message(err: Error) -> String {
        match err {
            Error::InvalidArgument { message, .. } => message,
            other => panic!("unexpected error {other:?}"),
        }
    }

    #[test]
    fn empty_map_and_zero_totals_are_identities() {
        for entries in [
            vec![],
            vec![
                (Value::Int(1), Value::Float(2.0)),
                (Value::Int(1), Value::Float(-2.0)),
            ],
        ] {
            let mut stage = build(entries, None).unwrap();
            assert!(stage.biases().is_empty());
            let mut c = Candidates::from_logits(&[1.0, 2.0]);
            stage.apply(&mut c, &Context::default()).unwrap();
            assert!(c.is_dense());
            assert_eq!(c.iter().collect::<Vec<_>>(), vec![(0, 1.0), (1, 2.0)]);
        }
    }

    #[test]
    fn adds_biases_and_bans_with_neg_inf() {
        // {0: 1.5, 2: -inf} on [1, 2, 3] → [2.5, 2, -inf].
        let mut stage = build(
            vec![
                (Value::Int(0), Value::Float(1.5)),
                (Value::Int(2), Value::Float(f64::NEG_INFINITY)),
            ],
            None,
        )
        .unwrap();
        assert_eq!(
            run(&mut stage, &[1.0, 2.0, 3.0]),
            vec![(0, 2.5), (1, 2.0), (2, f32::NEG_INFINITY)]
        );
    }

    #[test]
    fn duplicate_keys_add_up_after_resolution() {
        // "Hello" is token 2 (the lowest id with those bytes): 1 + 2 + 0.5 = 3.5 on token 2.
        let v = vocab();
        let mut stage = build(
            vec![
                (Value::Int(2), Value::Int(1)),
                (Value::Str("Hello".into()), Value::Float(2.0)),
                (Value::Int(2), Value::Float(0.5)),
                (Value::Str("a".into()), Value::Float(-1.0)),
            ],
            Some(&v),
        )
        .unwrap();
        assert_eq!(stage.biases(), &[(0, -1.0), (2, 3.5)]);
        assert_eq!(
            run(&mut stage, &[0.0; 5]),
            vec![(0, -1.0), (1, 0.0), (2, 3.5), (3, 0.0), (4, 0.0)]
        );
        // −inf plus anything finite stays −inf.
        let stage = build(
            vec![
                (Value::Int(1), Value::Float(f64::NEG_INFINITY)),
                (Value::Int(1), Value::Float(5.0)),
            ],
            None,
        )
        .unwrap();
        assert_eq!(stage.biases(), &[(1, f32::NEG_INFINITY)]);
    }

    #[test]
    fn string_keys_need_a_vocabulary_and_one_token() {
        let err = message(
            build(vec![(Value::Str("Hello".into()), Value::Float(1.0))], None).unwrap_err(),
        );
        assert!(
            err.contains("\"Hello\"") && err.contains("tokenizer") && err.contains("token ids"),
            "{err}"
        );
        let v = vocab();
        let err = message(
            build(
                vec![(Value::Str("Hello world".into()), Value::Float(1.0))],
                Some(&v),
            )
            .unwrap_err(),
        );
        assert!(
            err.contains("\"Hello world\"") && err.contains("single token"),
            "{err}"
        );
    }

    #[test]
    fn bad_keys_and_values_are_errors() {
        let v = vocab();
        let cases = [
            (Value::Int(-1), Value::Float(1.0), None, "-1"),
            (
                Value::Int(1 << 40),
                Value::Float(1.0),
                None,
                "not a token id",
            ),
            (Value::Float(1.0), Value::Float(1.0), None, "a float"),
            (
                Value::Int(1),
                Value::Float(f64::INFINITY),
                None,
                "-inf to ban",
            ),
            (Value::Int(1), Value::Float(f64::NAN), None, "not allowed"),
            (Value::Int(1), Value::Float(1e300), None, "f32 range"),
            (Value::Int(1), Value::Float(-1e300), None, "f32 range"),
            (
                Value::Int(1),
                Value::Str("x".into()),
                None,
                "must be a number",
            ),
            (
                Value::Int(5),
                Value::Float(1.0),
                Some(&v),
                "outside the vocabulary of 5 tokens",
            ),
        ];
        for (key, value, vocab, want) in cases {
            let err = message(build(vec![(key.clone(), value)], vocab).unwrap_err());
            assert!(err.contains(want), "{key}: {err}");
        }
        // Two finite biases whose sum leaves the f32 range.
        let err = build(
            vec![
                (Value::Int(1), Value::Float(3e38)),
                (Value::Int(1), Value::Float(3e38)),
            ],
            None,
        );
        assert!(message(err.unwrap_err()).contains("f32 range"));
    }

    #[test]
    fn ids_beyond_the_candidates_are_ignored_and_sums_saturate() {
        let mut stage = LogitBias::new(&[(9, 1.0), (0, 3e38)]).unwrap();
        assert_eq!(run(&mut stage, &[3e38, 1.0]), vec![(0, f32::MAX), (1, 1.0)]);
    }

    #[test]
    fn sparse_candidates_are_looked_up() {
        let mut stage = LogitBias::new(&[(7, 1.0), (3, -2.0), (100, 4.0)]).unwrap();
        let mut c = Candidates::from_sparse(vec![3, 9, 7], vec![0.0, 0.5, 1.0], 10).unwrap();
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![(3, -2.0), (9, 0.5), (7, 2.0)]
        );
    }

    #[test]
    fn registry_entry_builds_from_a_map() {
        let e = sieve_core::StageEntry::of::<LogitBias>();
        assert!(e.info.params[0].default.is_none(), "biases is required");
        let mut stage = (e.build)(
            &args(vec![(Value::Int(1), Value::Float(-0.5))]),
            &BuildContext::default(),
        )
        .unwrap();
        let mut c = Candidates::from_logits(&[0.0, 0.0]);
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(0, 0.0), (1, -0.5)]);
    }
}
