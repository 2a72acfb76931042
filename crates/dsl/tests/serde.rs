//! A `PipelineSpec` in configuration files: serialized as its canonical text; read back from
//! that text or from a list of stage objects as a `PipelineSource`, validated against the
//! registry the caller gives (here the built-ins).

use serde::de::DeserializeSeed;
use serde::{Deserialize, Serialize};
use sieve_core::Value;
use sieve_dsl::{PipelineSource, PipelineSpec, SpecSeed};

fn builtin(text: &str) -> PipelineSpec {
    PipelineSpec::parse(text, &sieve_samplers::builtin_registry()).unwrap()
}

/// What a program writes.
#[derive(Debug, PartialEq, Serialize)]
struct Config {
    sampler: PipelineSpec,
}

/// What it reads back, before it knows its registry.
#[derive(Debug, Deserialize)]
struct ConfigFile {
    sampler: PipelineSource,
}

/// Reads a spec from JSON with the built-in registry, in one step.
fn from_json(json: &str) -> Result<PipelineSpec, serde_json::Error> {
    let registry = sieve_samplers::builtin_registry();
    SpecSeed(&registry).deserialize(&mut serde_json::Deserializer::from_str(json))
}

#[test]
fn serializes_as_canonical_text() {
    let spec = builtin("top_k(40)");
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(json, serde_json::to_string(&spec.to_string()).unwrap());
    assert!(json.starts_with("\"top_k(k=40)"), "{json}");
}

#[test]
fn json_round_trips() {
    for text in ["top_k(40)", "top_k(0) | top_k(k=7)", "top_k\n|\ttop_k()"] {
        let spec = builtin(text);
        let json = serde_json::to_string(&Config {
            sampler: spec.clone(),
        })
        .unwrap();
        let file: ConfigFile = serde_json::from_str(&json).unwrap();
        let back = Config {
            sampler: file
                .sampler
                .resolve(&sieve_samplers::builtin_registry())
                .unwrap(),
        };
        assert_eq!(back.sampler, spec, "{json}");
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }
}

#[test]
fn reads_pipeline_text_that_is_not_canonical() {
    let back = from_json("\"top_k( 40 )\"").unwrap();
    assert_eq!(back, builtin("top_k(k=40)"));
}

#[test]
fn reads_a_list_of_stage_objects() {
    let back = from_json(r#"[{"stage": "top_k", "k": 40}, {"stage": "top_k"}]"#).unwrap();
    assert_eq!(back, builtin("top_k(40) | top_k"));
    let back = from_json(r#"[{"k": 3, "stage": "top_k"}]"#).unwrap();
    assert_eq!(back.stages[0].get("k"), Some(&Value::Int(3)));
}

#[test]
fn json_values_map_onto_values() {
    // top_p's `p` is a float: a JSON integer is converted like a literal integer would be.
    let back = from_json(r#"[{"stage": "top_p", "p": 1}]"#).unwrap();
    assert_eq!(back, builtin("top_p(p=1)"));
    assert_eq!(back.stages[0].get("p"), Some(&Value::Float(1.0)));
}

fn json_error(json: &str) -> String {
    from_json(json).unwrap_err().to_string()
}

#[test]
fn structured_errors_name_the_stage() {
    let e = json_error(r#"[{"stage": "top_k"}, {"stage": "top_kk", "k": 1}]"#);
    assert!(
        e.contains("stage 2 (`top_kk`): unknown stage `top_kk` (did you mean `top_k`?)"),
        "{e}"
    );
    let e = json_error(r#"[{"stage": "top_k", "kk": 1}]"#);
    assert!(
        e.contains("stage 1 (`top_k`): `top_k` has no parameter `kk` (did you mean `k`?"),
        "{e}"
    );
    let e = json_error(r#"[{"stage": "top_k", "k": 1.5}]"#);
    assert!(e.contains("`k` must be an integer, found a float"), "{e}");
    let e = json_error(r#"[{"stage": "top_k", "k": -1}]"#);
    assert!(
        e.contains("out of range") && e.contains("[0, 4294967295]"),
        "{e}"
    );
    let e = json_error(r#"[{"stage": "top_k", "k": 18446744073709551615}]"#);
    assert!(e.contains("out of range"), "{e}");
    let e = json_error(r#"[{"k": 40}]"#);
    assert!(e.contains("missing field `stage`"), "{e}");
    let e = json_error(r#"[{"stage": "top_k", "stage": "top_k"}]"#);
    assert!(e.contains("duplicate field `stage`"), "{e}");
    let e = json_error(r#"[{"stage": "top_k", "k": null}]"#);
    assert!(e.contains("invalid type: null"), "{e}");
    let e = json_error("[]");
    assert!(e.contains("empty pipeline"), "{e}");
    let e = json_error("40");
    assert!(
        e.contains("a pipeline string or a list of stage objects"),
        "{e}"
    );
}

#[test]
fn text_errors_carry_the_position() {
    let e = json_error("\"top_k(40) | top_kk\"");
    assert!(
        e.contains("line 1, column 13: unknown stage `top_kk` (did you mean `top_k`?)"),
        "{e}"
    );
}

#[test]
fn structured_values_nest_no_deeper_than_text() {
    // `breakers` of `dry`-like stages are lists; top_k's `k` is an int, so a nested list there
    // is a type error once it is read — unless it is too deep to be read at all.
    let deep = |n: usize| {
        format!(
            r#"[{{"stage": "top_k", "k": {}{}}}]"#,
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let e = json_error(&deep(sieve_dsl::MAX_NESTING - 1));
    assert!(e.contains("must be an integer, found a list"), "{e}");
    let e = json_error(&deep(sieve_dsl::MAX_NESTING));
    assert!(e.contains("nested more than"), "{e}");
}

#[test]
fn a_source_is_validated_against_the_registry_it_is_given() {
    // A stage the built-ins do not have: reading the source succeeds, resolving it names the
    // stage; with a registry that has it, it resolves.
    let source: PipelineSource = serde_json::from_str(r#"[{"stage": "mine", "by": 2}]"#).unwrap();
    let e = source
        .resolve(&sieve_samplers::builtin_registry())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("stage 1 (`mine`): unknown stage `mine`"),
        "{e}"
    );
    let mut registry = sieve_samplers::builtin_registry();
    registry
        .register(sieve_core::StageEntry::new(
            sieve_core::StageInfo::builtin(
                "mine",
                "test",
                vec![sieve_core::ParamSpec::float(
                    "by",
                    1.0,
                    sieve_core::Range::at_least(0.0),
                    "by",
                )],
            ),
            |_, _| Err(sieve_core::Error::EmptyPipeline),
        ))
        .unwrap();
    let spec = source.resolve(&registry).unwrap();
    assert_eq!(spec.to_string(), "mine(by=2.0) | dist(seed=-1)");
    let text = PipelineSource::text("mine(3)").resolve(&registry).unwrap();
    assert_eq!(text.stages[0].get("by"), Some(&Value::Float(3.0)));
}
