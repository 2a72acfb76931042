//! Stages as written, checked against the registry's schemas: names resolved, arguments
//! matched to parameters by position or name, types and ranges checked, defaults filled, and
//! `dist` appended when the pipeline does not end in a selector.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use sieve_core::{ParamError, ParamKind, ParamSpec, Registry, StageInfo, Value};

use crate::ast;
use crate::diagnostic::{clip, empty_pipeline, Diagnostic, DiagnosticKind};
use crate::span::{line_column, Span, StageSpans};
use crate::spec::{PipelineSpec, StageSpec};
use crate::suggest;

/// `top_p(p=0.9, min_keep=1)`, with required parameters bare: the form shown in help lines.
pub(crate) fn signature(info: &StageInfo) -> String {
    let params: Vec<String> = info
        .params
        .iter()
        .map(|p| match &p.default {
            Some(d) => alloc::format!("{}={}", p.name, clip(&d.to_string(), 20)),
            None => p.name.clone(),
        })
        .collect();
    alloc::format!("{}({})", info.name, params.join(", "))
}

fn param_names(info: &StageInfo) -> Vec<&str> {
    info.params.iter().map(|p| p.name.as_str()).collect()
}

/// The value a default stands for in canonical form (an integer default of a float parameter
/// becomes a float, so that the canonical text parses back to the same spec).
pub(crate) fn canonical_default(p: &ParamSpec) -> Option<Value> {
    p.default
        .as_ref()
        .map(|d| p.check(d).unwrap_or_else(|_| d.clone()))
}

/// Checks one argument against its parameter; the [`ParamError`] says which diagnostic it is.
fn check(
    info: &StageInfo,
    p: &ParamSpec,
    value: &Value,
    span: Span,
    source: &str,
) -> Result<Value, Diagnostic> {
    match p.check(value) {
        Ok(v) => Ok(v),
        Err(e @ ParamError::WrongType { .. }) => {
            let d = Diagnostic::new(DiagnosticKind::WrongType, e.to_string(), span, source);
            let whole = match value {
                // A whole float well inside i64 (the cast truncates, so compare back).
                Value::Float(x)
                    if p.kind == ParamKind::Int
                        && -9e15 < *x
                        && *x < 9e15
                        && (*x as i64) as f64 == *x =>
                {
                    Some(*x as i64)
                }
                _ => None,
            };
            Err(match whole {
                Some(i) => d.with_help(alloc::format!(
                    "write `{}={i}`, without a decimal point",
                    p.name
                )),
                None if p.doc.is_empty() => d,
                None => d.with_help(alloc::format!("`{}`: {}", p.name, p.doc)),
            })
        }
        Err(ParamError::OutOfRange { range, .. }) => Err(Diagnostic::new(
            DiagnosticKind::OutOfRange,
            alloc::format!(
                "`{}` = {} is out of range for `{}`",
                p.name,
                value,
                info.name
            ),
            span,
            source,
        )
        .with_help(alloc::format!("valid range is {range}"))),
    }
}

/// Matches the arguments of one stage to its parameters and fills the defaults.
fn stage(
    info: &StageInfo,
    s: &ast::Stage,
    source: &str,
) -> Result<(StageSpec, StageSpans), Diagnostic> {
    let params = &info.params;
    let mut slots: Vec<Option<(Value, Span)>> = alloc::vec![None; params.len()];
    let mut named_seen = false;
    for (index, arg) in s.args.iter().enumerate() {
        let slot = match &arg.name {
            None if named_seen => {
                let d = Diagnostic::new(
                    DiagnosticKind::PositionalAfterNamed,
                    "positional argument after a named argument",
                    arg.span,
                    source,
                );
                return Err(match params.get(index) {
                    Some(p) => d.with_help(alloc::format!(
                        "name it: `{}={}`",
                        p.name,
                        clip(&arg.value.to_string(), 24)
                    )),
                    None => d.with_help(alloc::format!("signature: `{}`", signature(info))),
                });
            }
            None if index >= params.len() => {
                let message = match params.len() {
                    0 => alloc::format!("`{}` takes no arguments", info.name),
                    1 => alloc::format!(
                        "`{}` takes 1 argument but {} were given",
                        info.name,
                        s.args.len()
                    ),
                    n => alloc::format!(
                        "`{}` takes {n} arguments but {} were given",
                        info.name,
                        s.args.len()
                    ),
                };
                let help = match params.len() {
                    0 => alloc::format!("write `{}`", info.name),
                    _ => alloc::format!("signature: `{}`", signature(info)),
                };
                return Err(Diagnostic::new(
                    DiagnosticKind::TooManyArguments,
                    message,
                    arg.span,
                    source,
                )
                .with_help(help));
            }
            None => index,
            Some((name, name_span)) => {
                named_seen = true;
                match params.iter().position(|p| p.name == *name) {
                    Some(i) => i,
                    None => return Err(unknown_param(info, name, *name_span, source)),
                }
            }
        };
        let p = &params[slot];
        if let Some((_, first)) = &slots[slot] {
            let (line, column) = line_column(source, first.start);
            return Err(Diagnostic::new(
                DiagnosticKind::DuplicateParam,
                alloc::format!("`{}` is given twice", p.name),
                arg.span,
                source,
            )
            .with_help(alloc::format!(
                "the first value is at line {line}, column {column}; remove one"
            )));
        }
        let value = check(info, p, &arg.value, arg.value_span, source)?;
        slots[slot] = Some((value, arg.span));
    }

    let mut args = Vec::with_capacity(params.len());
    let mut spans = Vec::new();
    for (p, slot) in params.iter().zip(slots) {
        let value = match slot {
            Some((value, span)) => {
                spans.push((p.name.clone(), span));
                value
            }
            None => canonical_default(p).ok_or_else(|| {
                let doc = if p.doc.is_empty() {
                    String::new()
                } else {
                    alloc::format!(" ({})", p.doc)
                };
                Diagnostic::new(
                    DiagnosticKind::MissingArgument,
                    alloc::format!("missing argument `{}` for `{}`", p.name, info.name),
                    s.span,
                    source,
                )
                .with_help(alloc::format!(
                    "`{}` has no default{doc}; signature: `{}`",
                    p.name,
                    signature(info)
                ))
            })?,
        };
        args.push((p.name.clone(), value));
    }
    let spec = StageSpec {
        name: info.name.clone(),
        args,
    };
    Ok((
        spec,
        StageSpans {
            stage: s.span,
            args: spans,
            appended: false,
        },
    ))
}

fn unknown_param(info: &StageInfo, name: &str, span: Span, source: &str) -> Diagnostic {
    let names = param_names(info);
    let d = Diagnostic::new(
        DiagnosticKind::UnknownParam,
        alloc::format!("`{}` has no parameter `{}`", info.name, clip(name, 32)),
        span,
        source,
    );
    let all = suggest::list(&names, 16);
    match (
        suggest::did_you_mean(&suggest::closest(name, &names, &[])),
        names.is_empty(),
    ) {
        (_, true) => d.with_help(alloc::format!("`{}` takes no arguments", info.name)),
        (Some(near), _) => d.with_help(alloc::format!("{near} (parameters: {all})")),
        (None, _) => d.with_help(alloc::format!("parameters of `{}`: {all}", info.name)),
    }
}

/// "unknown stage `x`" at `span`, with the nearest registered name (or alias) or the list
/// of stages as help.
pub(crate) fn unknown_stage(
    registry: &Registry,
    name: &str,
    span: Span,
    source: &str,
) -> Diagnostic {
    let names: Vec<&str> = registry.names().collect();
    let aliases: Vec<(&str, &str)> = registry
        .iter()
        .flat_map(|e| {
            e.info
                .aliases
                .iter()
                .map(|a| (a.as_str(), e.info.name.as_str()))
        })
        .collect();
    let d = Diagnostic::new(
        DiagnosticKind::UnknownStage,
        alloc::format!("unknown stage `{}`", clip(name, 32)),
        span,
        source,
    );
    match suggest::did_you_mean(&suggest::closest(name, &names, &aliases)) {
        Some(near) => d.with_help(near),
        None if names.is_empty() => d.with_help("no stage is registered"),
        None => d.with_help(alloc::format!(
            "known stages: {}",
            suggest::list(&names, 16)
        )),
    }
}

/// The `dist` stage appended to a pipeline that does not end in a selector.
fn appended_dist(registry: &Registry, at: Span, source: &str) -> Result<StageSpec, Diagnostic> {
    let selectors: Vec<&str> = registry
        .iter()
        .filter(|e| e.info.selector)
        .map(|e| e.info.name.as_str())
        .collect();
    let fail = |message: String| {
        let d = Diagnostic::new(DiagnosticKind::NoSelector, message, at, source);
        match selectors.is_empty() {
            true => d.with_help("register a selector stage"),
            false => d.with_help(alloc::format!(
                "end the pipeline with a selector: {}",
                suggest::list(&selectors, 16)
            )),
        }
    };
    let Some(entry) = registry.get("dist") else {
        return Err(fail(String::from(
            "the pipeline does not end in a selector, and there is no `dist` stage to append",
        )));
    };
    let mut args = Vec::new();
    for p in &entry.info.params {
        match canonical_default(p) {
            Some(v) => args.push((p.name.clone(), v)),
            None => {
                return Err(fail(alloc::format!(
                    "the pipeline does not end in a selector, and `dist` cannot be appended: its parameter `{}` has no default",
                    p.name
                )))
            }
        }
    }
    Ok(StageSpec {
        name: String::from("dist"),
        args,
    })
}

/// Validates `stages` (written in `source`) against `registry`.
pub(crate) fn validate(
    stages: &[ast::Stage],
    registry: &Registry,
    source: &str,
) -> Result<(PipelineSpec, Vec<StageSpans>), Diagnostic> {
    let mut specs = Vec::with_capacity(stages.len() + 1);
    let mut spans = Vec::with_capacity(stages.len() + 1);
    let mut last_selects = false;
    for (i, s) in stages.iter().enumerate() {
        let entry = registry
            .get(&s.name)
            .ok_or_else(|| unknown_stage(registry, &s.name, s.name_span, source))?;
        let (spec, at) = stage(&entry.info, s, source)?;
        last_selects = entry.info.selector;
        if last_selects && i + 1 < stages.len() {
            return Err(Diagnostic::new(
                DiagnosticKind::SelectorNotLast,
                alloc::format!(
                    "`{}` selects the token, so it must be the last stage",
                    s.name
                ),
                s.name_span,
                source,
            )
            .with_help(
                "the stages after a selector could not change its choice; move it to the end",
            ));
        }
        specs.push(spec);
        spans.push(at);
    }
    let Some(last) = stages.last() else {
        return Err(empty_pipeline(source));
    };
    if !last_selects {
        let at = Span::point(last.span.end);
        specs.push(appended_dist(registry, at, source)?);
        spans.push(StageSpans {
            stage: at,
            args: Vec::new(),
            appended: true,
        });
    }
    Ok((PipelineSpec { stages: specs }, spans))
}
