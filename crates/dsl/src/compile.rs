//! The compiler: text → [`PipelineSpec`] (parse, validate) → [`Pipeline`] (build), with
//! constructor errors placed in the source text.

use alloc::vec::Vec;

use sieve_core::{BuildContext, Error, Pipeline, Registry};

use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::span::StageSpans;
use crate::spec::PipelineSpec;
use crate::{syntax, validate};

impl PipelineSpec {
    /// Parses and validates `source` against the registry's schemas (no stage is built).
    ///
    /// # Errors
    /// The first mistake in text order, as a [`Diagnostic`] pointing into `source`.
    pub fn parse(source: &str, registry: &Registry) -> Result<PipelineSpec, Diagnostic> {
        parse_located(source, registry).map(|(spec, _)| spec)
    }

    /// Builds the stages.
    ///
    /// The spec has no source text of its own, so a constructor's error is placed in the
    /// canonical text (`self.to_string()`): render it with that text. [`crate::compile`]
    /// places it in the text the user wrote instead.
    ///
    /// # Errors
    /// An unknown stage, or a constructor's error.
    pub fn build(
        &self,
        registry: &Registry,
        cx: &BuildContext<'_>,
    ) -> Result<Pipeline, Diagnostic> {
        let (text, spans) = self.canonical();
        build_located(self, &spans, registry, cx, &text)
    }
}

/// A compiled pipeline: its canonical spec and the built stages.
#[derive(Debug)]
pub struct Compiled {
    /// The validated, canonical spec.
    pub spec: PipelineSpec,
    /// The built stages, ready to sample.
    pub pipeline: Pipeline,
}

/// Parses, validates and builds `source`. A constructor's error is pointed at the offending
/// argument as written (or at the stage, when the argument was left to its default; or at the
/// end of the text for an appended `dist`).
///
/// # Errors
/// The first mistake, as a [`Diagnostic`] pointing into `source`.
pub fn compile(
    source: &str,
    registry: &Registry,
    cx: &BuildContext<'_>,
) -> Result<Compiled, Diagnostic> {
    let parsed = crate::Parsed::parse(source, registry)?;
    let pipeline = parsed.build(registry, cx)?;
    Ok(Compiled {
        spec: parsed.into_spec(),
        pipeline,
    })
}

/// Parses and validates `source`, keeping where each stage and argument was written.
pub(crate) fn parse_located(
    source: &str,
    registry: &Registry,
) -> Result<(PipelineSpec, Vec<StageSpans>), Diagnostic> {
    crate::count::parsed();
    let stages = syntax::parse(source)?;
    validate::validate(&stages, registry, source)
}

/// Builds `spec`, whose stages and arguments are at `spans` of `source`.
pub(crate) fn build_located(
    spec: &PipelineSpec,
    spans: &[StageSpans],
    registry: &Registry,
    cx: &BuildContext<'_>,
    source: &str,
) -> Result<Pipeline, Diagnostic> {
    let mut stages = Vec::with_capacity(spec.stages.len());
    for (i, stage) in spec.stages.iter().enumerate() {
        let at = spans.get(i);
        let stage_span = at.map_or_else(|| crate::Span::point(source.len()), |s| s.stage);
        if registry.get(&stage.name).is_none() {
            return Err(validate::unknown_stage(
                registry,
                &stage.name,
                stage_span,
                source,
            ));
        }
        let args = sieve_core::Args::new(&stage.name, stage.args.clone());
        match registry.build(&stage.name, &args, cx) {
            Ok(built) => stages.push((stage.name.clone(), built)),
            Err(e) => return Err(build_error(&e, at, stage_span, source)),
        }
    }
    Ok(Pipeline::new(stages))
}

/// A constructor's error, placed at the argument it names when that argument was written.
fn build_error(
    e: &Error,
    at: Option<&StageSpans>,
    stage_span: crate::Span,
    source: &str,
) -> Diagnostic {
    let (kind, param) = match e {
        Error::InvalidArgument { param, .. } => (DiagnosticKind::InvalidArgument, Some(param)),
        Error::WrongType { param, .. } => (DiagnosticKind::WrongType, Some(param)),
        Error::MissingArgument { param, .. } => (DiagnosticKind::MissingArgument, Some(param)),
        Error::UnknownStage { .. } => (DiagnosticKind::UnknownStage, None),
        _ => (DiagnosticKind::Build, None),
    };
    let span = match (at, param) {
        (Some(at), Some(param)) => at.of(param),
        _ => stage_span,
    };
    let d = Diagnostic::new(kind, alloc::string::ToString::to_string(e), span, source);
    match at {
        Some(at) if at.appended => {
            d.with_help("`dist` was appended because the pipeline does not end in a selector")
        }
        _ => d,
    }
}
