//! [`Parsed`]: pipeline text parsed once, kept with where each stage and argument was written,
//! so that every copy built from it (one per sequence, per beam, per choice, for a draft
//! model) places a constructor's error in the text the user wrote, without parsing again.

use alloc::string::String;
use alloc::vec::Vec;

use sieve_core::{BuildContext, Pipeline, Registry};

use crate::compile::{build_located, parse_located};
use crate::diagnostic::Diagnostic;
use crate::span::StageSpans;
use crate::spec::PipelineSpec;

/// Pipeline text, parsed and validated once: its canonical [`PipelineSpec`], the text, and
/// where each stage and argument is in it.
///
/// ```
/// # let registry = sieve_samplers::builtin_registry();
/// let parsed = sieve_dsl::Parsed::parse("top_k(40) | temp(0.7)", &registry).unwrap();
/// // Three copies, seeded 7, 8 and 9 (for the stages whose seed is -1).
/// let cx = sieve_core::BuildContext { seed: 7, vocab: None };
/// assert_eq!(parsed.copies(&registry, &cx, 3).unwrap().len(), 3);
/// assert!(parsed.spec().to_string().ends_with("dist(seed=-1)"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    spec: PipelineSpec,
    spans: Vec<StageSpans>,
    source: String,
}

impl Parsed {
    /// Parses and validates `source` against the registry's schemas (no stage is built).
    ///
    /// # Errors
    /// The first mistake in text order, as a [`Diagnostic`] pointing into `source`.
    pub fn parse(source: &str, registry: &Registry) -> Result<Parsed, Diagnostic> {
        let (spec, spans) = parse_located(source, registry)?;
        Ok(Parsed {
            spec,
            spans,
            source: String::from(source),
        })
    }

    /// The validated, canonical spec.
    pub fn spec(&self) -> &PipelineSpec {
        &self.spec
    }

    /// The text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The canonical spec, dropping the text.
    pub fn into_spec(self) -> PipelineSpec {
        self.spec
    }

    /// Builds the stages with `cx`. A constructor's error points at the offending argument as
    /// written, as [`crate::compile`]'s does; render it with [`Parsed::source`].
    ///
    /// # Errors
    /// A constructor's error.
    pub fn build(
        &self,
        registry: &Registry,
        cx: &BuildContext<'_>,
    ) -> Result<Pipeline, Diagnostic> {
        build_located(&self.spec, &self.spans, registry, cx, &self.source)
    }

    /// Builds `n` copies, copy `i` with seed `cx.seed + i` (wrapping), the vocabulary of `cx`:
    /// the seeded copies of a run with several sequences (copy 0 is the plain run's pipeline).
    ///
    /// # Errors
    /// The first constructor's error, as [`Parsed::build`].
    pub fn copies(
        &self,
        registry: &Registry,
        cx: &BuildContext<'_>,
        n: usize,
    ) -> Result<Vec<Pipeline>, Diagnostic> {
        (0..n as u64)
            .map(|i| {
                let cx = BuildContext {
                    seed: cx.seed.wrapping_add(i),
                    vocab: cx.vocab,
                };
                self.build(registry, &cx)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PipelineSource, StageSpec};
    use sieve_core::Value;

    #[test]
    fn copies_are_seeded_in_turn_and_errors_point_into_the_text_as_written() {
        let registry = sieve_samplers::builtin_registry();
        let parsed = Parsed::parse("top_k(40)|temp(0.7)", &registry).unwrap();
        assert_eq!(parsed.source(), "top_k(40)|temp(0.7)");
        assert_eq!(
            parsed.spec(),
            &PipelineSpec::parse("top_k(40)|temp(0.7)", &registry).unwrap()
        );
        let cx = BuildContext {
            seed: u64::MAX,
            vocab: None,
        };
        assert_eq!(parsed.copies(&registry, &cx, 3).unwrap().len(), 3);
        let compiled = crate::compile("top_k(40)|temp(0.7)", &registry, &cx).unwrap();
        assert_eq!(&compiled.spec, parsed.spec());
    }

    #[test]
    fn stages_given_directly_validate_as_text_does() {
        let registry = sieve_samplers::builtin_registry();
        let stage = |name: &str, args: &[(&str, Value)]| StageSpec {
            name: name.into(),
            args: args.iter().map(|(n, v)| ((*n).into(), v.clone())).collect(),
        };
        let spec = PipelineSource::stages([
            stage("top_k", &[("k", Value::Int(40))]),
            stage("temp", &[("t", Value::Int(1))]),
        ])
        .resolve(&registry)
        .unwrap();
        assert_eq!(
            spec,
            PipelineSpec::parse("top_k(40) | temp(1)", &registry).unwrap()
        );
        let err = PipelineSource::stages([stage("top_k", &[("k", Value::Int(-1))])])
            .resolve(&registry)
            .unwrap_err();
        assert!(err.to_string().starts_with("stage 1 (`top_k`)"), "{err}");
        assert!(PipelineSource::stages([]).resolve(&registry).is_err());
    }
}
