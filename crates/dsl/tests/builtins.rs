//! The language against the real built-in registry: every built-in stage parses with its
//! defaults, and `top_k`'s schema behaves as documented.

use sieve_core::Value;
use sieve_dsl::{DiagnosticKind, PipelineSpec, StageSpec};

#[test]
fn every_builtin_stage_parses_with_its_defaults() {
    let registry = sieve_samplers::builtin_registry();
    let mut checked = 0;
    for entry in registry.iter() {
        let info = &entry.info;
        let required = info.params.iter().any(|p| p.default.is_none());
        for text in [
            info.name.clone(),
            format!("{}()", info.name),
            format!(" {}\n( )\t", info.name),
        ] {
            match PipelineSpec::parse(&text, &registry) {
                Ok(spec) => {
                    assert!(!required, "{text}: parsed without its required argument");
                    let expected = StageSpec {
                        name: info.name.clone(),
                        args: info
                            .params
                            .iter()
                            .map(|p| {
                                let d = p.default.clone().unwrap();
                                (p.name.clone(), p.check(&d).unwrap_or(d))
                            })
                            .collect(),
                    };
                    assert_eq!(spec.stages[0], expected, "{text}");
                    let canonical = spec.to_string();
                    assert_eq!(
                        PipelineSpec::parse(&canonical, &registry).unwrap(),
                        spec,
                        "{canonical}"
                    );
                }
                Err(d) if required => {
                    assert_eq!(d.kind, DiagnosticKind::MissingArgument, "{text}: {d}")
                }
                Err(d) if d.kind == DiagnosticKind::SelectorNotLast => unreachable!("{text}: {d}"),
                Err(d) => panic!("{text}: {d}"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 3 * 15, "only {checked} built-in stage texts");
}

#[test]
fn top_k_by_position_and_by_name() {
    let registry = sieve_samplers::builtin_registry();
    let spec = PipelineSpec::parse("top_k(40)", &registry).unwrap();
    assert_eq!(
        spec.stages[0],
        StageSpec {
            name: "top_k".into(),
            args: vec![("k".into(), Value::Int(40))]
        }
    );
    assert_eq!(PipelineSpec::parse("top_k(k=40)", &registry).unwrap(), spec);
    assert_eq!(PipelineSpec::parse("top_k", &registry).unwrap(), spec);
    assert!(spec.to_string().starts_with("top_k(k=40) | "), "{spec}");
    assert_eq!(
        PipelineSpec::parse("top_k(4294967295)", &registry)
            .unwrap()
            .stages[0]
            .get("k"),
        Some(&Value::Int(4294967295))
    );
    let err = PipelineSpec::parse("top_k(k=4294967296)", &registry).unwrap_err();
    assert_eq!(err.kind, DiagnosticKind::OutOfRange);
    assert_eq!(err.help.as_deref(), Some("valid range is [0, 4294967295]"));
    let err = PipelineSpec::parse("top_k(0.5)", &registry).unwrap_err();
    assert_eq!(err.kind, DiagnosticKind::WrongType);
}

#[test]
fn unknown_builtin_stage_suggests_nearest_name() {
    let registry = sieve_samplers::builtin_registry();
    let err = PipelineSpec::parse("top_k(40) | top_kk", &registry).unwrap_err();
    assert_eq!(err.kind, DiagnosticKind::UnknownStage);
    assert_eq!(err.help.as_deref(), Some("did you mean `top_k`?"));
    assert_eq!((err.line, err.column), (1, 13));
}
