//! `compile` and `PipelineSpec::build`: building the stages, and constructor errors placed at
//! the argument that caused them.

mod common;

use sieve_core::{BuildContext, Candidates, Context, ParamSpec, Registry, StageEntry, StageInfo};
use sieve_dsl::{compile, Diagnostic, DiagnosticKind, PipelineSpec};

fn compile_err(source: &str, registry: &Registry) -> Diagnostic {
    compile(source, registry, &BuildContext::default()).expect_err(source)
}

/// The text under the diagnostic's span.
fn under(source: &str, d: &Diagnostic) -> String {
    source[d.span.start..d.span.end].to_string()
}

#[test]
fn builds_the_stages_in_order_and_appends_dist() {
    let registry = common::registry();
    let compiled = compile("temp(0.7) | top_k(40)", &registry, &BuildContext::default()).unwrap();
    assert_eq!(
        compiled.pipeline.names().collect::<Vec<_>>(),
        ["temp", "top_k", "dist"]
    );
    assert_eq!(
        compiled.spec.to_string(),
        "temp(t=0.7) | top_k(k=40) | dist(seed=-1)"
    );
    let mut compiled = compile("top_k | greedy", &registry, &BuildContext::default()).unwrap();
    assert_eq!(
        compiled.pipeline.names().collect::<Vec<_>>(),
        ["top_k", "greedy"]
    );
    let mut c = Candidates::from_logits(&[0.5, 0.1]);
    assert_eq!(compiled.pipeline.sample(&mut c, &Context::default()), Ok(0));
}

#[test]
fn constructor_errors_point_at_the_argument() {
    let registry = common::registry();
    let source = "top_k(40) | picky(x=0.25, y=0.5)";
    let d = compile_err(source, &registry);
    assert_eq!(d.kind, DiagnosticKind::InvalidArgument);
    assert_eq!(under(source, &d), "x=0.25");
    insta::assert_snapshot!("constructor_error_named", d.render(source), source);

    let source = "picky(0.5,\n      0.25)";
    let d = compile_err(source, &registry);
    assert_eq!(under(source, &d), "0.25");
    assert_eq!((d.line, d.column), (2, 7));
    insta::assert_snapshot!("constructor_error_positional", d.render(source), source);
}

#[test]
fn constructor_errors_about_defaults_point_at_the_stage() {
    let registry = common::registry();
    // `y` defaults to 0.25, which the constructor rejects.
    let source = "temp | picky(x=0.5)";
    let d = compile_err(source, &registry);
    assert_eq!(d.kind, DiagnosticKind::InvalidArgument);
    assert_eq!(under(source, &d), "picky(x=0.5)");
    insta::assert_snapshot!("constructor_error_default", d.render(source), source);
}

#[test]
fn other_constructor_errors_point_at_the_stage() {
    let registry = common::registry();
    let source = "temp | broken | greedy";
    let d = compile_err(source, &registry);
    assert_eq!(d.kind, DiagnosticKind::Build);
    assert_eq!(under(source, &d), "broken");
    insta::assert_snapshot!("constructor_error_other", d.render(source), source);
}

#[test]
fn an_appended_dist_that_fails_points_at_the_end() {
    let mut registry = Registry::new();
    registry
        .register(StageEntry::new(
            StageInfo::builtin("noop", "", vec![]),
            |_, _| Ok(Box::new(common::Stub::new("noop", false)) as Box<dyn sieve_core::Sampler>),
        ))
        .unwrap();
    registry
        .register(StageEntry::new(
            StageInfo::builtin("dist", "", vec![ParamSpec::seed()]).selector(),
            |args, _| Err(args.invalid("seed", "no randomness today")),
        ))
        .unwrap();
    let source = "noop  ";
    let d = compile_err(source, &registry);
    assert_eq!(d.kind, DiagnosticKind::InvalidArgument);
    assert_eq!(d.span, sieve_dsl::Span::point(4));
    assert!(d.help.as_deref().unwrap().contains("appended"), "{d}");
    insta::assert_snapshot!("constructor_error_appended_dist", d.render(source), source);
}

#[test]
fn build_places_errors_in_the_canonical_text() {
    let registry = common::registry();
    let spec = PipelineSpec::parse("picky(0.25) | greedy", &registry).unwrap();
    let d = spec.build(&registry, &BuildContext::default()).unwrap_err();
    let text = spec.to_string();
    assert_eq!(text, "picky(x=0.25, y=0.25) | greedy");
    assert_eq!(under(&text, &d), "x=0.25");
    assert_eq!(d.kind, DiagnosticKind::InvalidArgument);
}

#[test]
fn build_rejects_stages_the_registry_lacks() {
    let registry = common::registry();
    let spec = PipelineSpec::parse("top_k | greedy", &registry).unwrap();
    let small = Registry::new();
    let d = spec.build(&small, &BuildContext::default()).unwrap_err();
    assert_eq!(d.kind, DiagnosticKind::UnknownStage);
    assert_eq!(under(&spec.to_string(), &d), "top_k(k=40)");
}

#[test]
fn parse_errors_pass_through_compile() {
    let registry = common::registry();
    let d = compile_err("top_q", &registry);
    assert_eq!(d.kind, DiagnosticKind::UnknownStage);
}
