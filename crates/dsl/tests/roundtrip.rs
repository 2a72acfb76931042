//! The canonical form as a property: for many generated pipelines (arguments by position and
//! by name, in any order, every kind of value, arbitrary whitespace and quoting), parsing gives
//! exactly the values written with the defaults filled in, printing the spec and parsing it
//! back gives the identical spec, and printing is idempotent.

mod common;

use proptest::prelude::*;
use proptest::test_runner::Config;
use sieve_core::{ParamKind, ParamSpec, Registry, StageInfo, Value};
use sieve_dsl::{PipelineSpec, StageSpec};

/// The non-selector stages of the test registry that a generated pipeline may use.
const STAGES: &[&str] = &[
    "temp",
    "top_k",
    "top_p",
    "min_p",
    "penalty",
    "dry",
    "logit_bias",
    "grammar",
];
/// The selectors it may end with.
const SELECTORS: &[&str] = &["greedy", "dist", "mirostat"];

fn info(registry: &Registry, name: &str) -> StageInfo {
    registry
        .get(name)
        .expect("stage of the test registry")
        .info
        .clone()
}

fn float_in(p: &ParamSpec) -> BoxedStrategy<f64> {
    let range = p.range.expect("float parameters have ranges here");
    let lo = if range.min.is_finite() {
        range.min
    } else {
        -1e6
    };
    let hi = if range.max.is_finite() {
        range.max
    } else {
        1e6
    };
    let special = [
        range.min,
        range.max,
        0.0,
        1e-300,
        5e-324,
        1.0 / 3.0,
        1e300,
        0.1,
        2.5,
    ];
    prop_oneof![
        3 => lo..=hi,
        1 => proptest::sample::select(special.to_vec()),
    ]
    .prop_filter("in range", move |x| range.contains(*x))
    .boxed()
}

fn int_in(p: &ParamSpec) -> BoxedStrategy<i64> {
    let range = p.range.expect("int parameters have ranges here");
    let lo = range.min.max(i64::MIN as f64) as i64 + i64::from(!range.min_inclusive);
    let hi = if range.max >= i64::MAX as f64 {
        i64::MAX
    } else {
        range.max as i64 - i64::from(!range.max_inclusive)
    };
    prop_oneof![lo..=hi, Just(lo), Just(hi), (lo..=lo.saturating_add(100))].boxed()
}

fn key() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        any::<String>().prop_map(Value::Str)
    ]
}

fn value_for(p: &ParamSpec) -> BoxedStrategy<Value> {
    match p.kind {
        ParamKind::Float => float_in(p).prop_map(Value::Float).boxed(),
        ParamKind::Int => int_in(p).prop_map(Value::Int).boxed(),
        ParamKind::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        ParamKind::Str => any::<String>().prop_map(Value::Str).boxed(),
        ParamKind::List => proptest::collection::vec(any::<String>().prop_map(Value::Str), 0..4)
            .prop_map(Value::List)
            .boxed(),
        ParamKind::Map => {
            let bias = prop_oneof![
                any::<f64>().prop_filter("finite", |x| x.is_finite()),
                Just(f64::NEG_INFINITY),
                Just(f64::INFINITY)
            ];
            proptest::collection::vec((key(), bias.prop_map(Value::Float)), 0..4)
                .prop_map(Value::Map)
                .boxed()
        }
    }
}

/// One generated stage: its name, a value or nothing for each parameter, how many leading
/// parameters are written by position, and a tape of choices for spelling and whitespace.
#[derive(Debug, Clone)]
struct Planned {
    name: &'static str,
    values: Vec<Option<Value>>,
    positional: usize,
    tape: Vec<u8>,
}

fn planned(registry: &Registry, names: &'static [&'static str]) -> BoxedStrategy<Planned> {
    let infos: Vec<StageInfo> = names.iter().map(|n| info(registry, n)).collect();
    (0..names.len())
        .prop_flat_map(move |i| {
            let params = infos[i].params.clone();
            let values: Vec<BoxedStrategy<Option<Value>>> = params
                .iter()
                .map(|p| {
                    if p.default.is_none() {
                        value_for(p).prop_map(Some).boxed()
                    } else {
                        proptest::option::of(value_for(p)).boxed()
                    }
                })
                .collect();
            (
                Just(names[i]),
                values,
                0..=params.len(),
                proptest::collection::vec(any::<u8>(), 32),
            )
        })
        .prop_map(|(name, values, positional, tape)| {
            // Only a prefix of given parameters can be positional.
            let given_prefix = values.iter().take_while(|v| v.is_some()).count();
            Planned {
                name,
                positional: positional.min(given_prefix),
                values,
                tape,
            }
        })
        .boxed()
}

/// Draws choices from a tape.
struct Tape<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Tape<'_> {
    fn next(&mut self, n: u8) -> u8 {
        let b = self.bytes[self.at % self.bytes.len()];
        self.at += 1;
        b % n
    }
    fn space(&mut self) -> &'static str {
        ["", "", " ", "  ", "\n", "\t", " \r\n  "][usize::from(self.next(7))]
    }
}

/// A value in one of several equivalent spellings.
fn spell(v: &Value, float_param: bool, tape: &mut Tape<'_>) -> String {
    match v {
        Value::Float(x)
            if float_param && x.fract() == 0.0 && x.abs() < 1e15 && tape.next(2) == 0 =>
        {
            format!("{}", *x as i64)
        }
        Value::Float(x) if x.is_finite() => match tape.next(3) {
            0 => format!("{x:?}"),
            1 => format!("{x:e}"),
            _ => format!("{x:E}"),
        },
        Value::Int(i) if *i >= 0 && tape.next(4) == 0 => format!("+{i}"),
        Value::Str(s) if tape.next(2) == 0 => {
            let mut out = String::from("'");
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("\\'"),
                    '\\' => out.push_str("\\\\"),
                    c if c.is_control() => out.push_str(&format!("\\u{{{:X}}}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('\'');
            out
        }
        Value::List(items) => {
            let parts: Vec<String> = items.iter().map(|i| spell(i, false, tape)).collect();
            let trailing = if !parts.is_empty() && tape.next(3) == 0 {
                ","
            } else {
                ""
            };
            format!(
                "[{}{}{trailing}{}]",
                tape.space(),
                parts.join(","),
                tape.space()
            )
        }
        Value::Map(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}{}:{}{}",
                        spell(k, false, tape),
                        tape.space(),
                        tape.space(),
                        spell(v, false, tape)
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        other => other.to_string(),
    }
}

/// The text of a planned stage and the spec it must parse to.
fn render(registry: &Registry, plan: &Planned) -> (String, StageSpec) {
    let info = info(registry, plan.name);
    let mut tape = Tape {
        bytes: &plan.tape,
        at: 0,
    };
    let mut args: Vec<String> = Vec::new();
    let mut named: Vec<String> = Vec::new();
    for (i, (p, v)) in info.params.iter().zip(&plan.values).enumerate() {
        let Some(v) = v else { continue };
        let text = spell(v, p.kind == ParamKind::Float, &mut tape);
        if i < plan.positional {
            args.push(text);
        } else {
            named.push(format!("{}{}={}{text}", p.name, tape.space(), tape.space()));
        }
    }
    // Named arguments in any order.
    for i in (1..named.len()).rev() {
        let j = usize::from(tape.next(u8::try_from(i + 1).unwrap()));
        named.swap(i, j);
    }
    args.extend(named);
    let text = if args.is_empty() && tape.next(2) == 0 {
        plan.name.to_string()
    } else {
        let sep = format!(",{}", tape.space());
        format!(
            "{}({}{}{})",
            plan.name,
            tape.space(),
            args.join(&sep),
            tape.space()
        )
    };
    let expected = StageSpec {
        name: plan.name.to_string(),
        args: info
            .params
            .iter()
            .zip(&plan.values)
            .map(|(p, v)| {
                let v = v.clone().or_else(|| p.default.clone()).unwrap();
                (p.name.clone(), p.check(&v).unwrap())
            })
            .collect(),
    };
    (text, expected)
}

fn pipeline(registry: &Registry) -> impl Strategy<Value = (String, PipelineSpec)> + '_ {
    (
        proptest::collection::vec(planned(registry, STAGES), 1..5),
        proptest::option::of(planned(registry, SELECTORS)),
        proptest::collection::vec(any::<u8>(), 8),
    )
        .prop_map(move |(stages, selector, spaces)| {
            let mut tape = Tape {
                bytes: &spaces,
                at: 0,
            };
            let mut text = String::from(tape.space());
            let mut specs = Vec::new();
            for (i, plan) in stages.iter().chain(selector.iter()).enumerate() {
                if i > 0 {
                    text.push_str(&format!("{}|{}", tape.space(), tape.space()));
                }
                let (t, s) = render(registry, plan);
                text.push_str(&t);
                specs.push(s);
            }
            text.push_str(tape.space());
            if selector.is_none() {
                specs.push(StageSpec {
                    name: "dist".into(),
                    args: vec![("seed".into(), Value::Int(-1))],
                });
            }
            (text, PipelineSpec { stages: specs })
        })
}

#[test]
fn parsing_gives_what_was_written_and_canonical_text_round_trips() {
    let registry = common::registry();
    let mut runner = proptest::test_runner::TestRunner::new(Config {
        cases: 1000,
        ..Config::default()
    });
    runner
        .run(&pipeline(&registry), |(text, expected)| {
            let spec = PipelineSpec::parse(&text, &registry).map_err(|e| {
                TestCaseError::fail(format!("{text:?} does not parse:\n{}", e.render(&text)))
            })?;
            prop_assert_eq!(&spec, &expected, "text: {:?}", text);
            let canonical = spec.to_string();
            let again = PipelineSpec::parse(&canonical, &registry).map_err(|e| {
                TestCaseError::fail(format!(
                    "canonical {canonical:?} does not parse:\n{}",
                    e.render(&canonical)
                ))
            })?;
            // Compare bit patterns too: -0.0 == 0.0 would hide a lost sign.
            prop_assert_eq!(format!("{again:?}"), format!("{spec:?}"));
            prop_assert_eq!(&again, &spec);
            prop_assert_eq!(again.to_string(), canonical);
            Ok(())
        })
        .unwrap();
}

#[test]
fn canonical_form_examples() {
    let registry = common::registry();
    let canonical = |s: &str| PipelineSpec::parse(s, &registry).unwrap().to_string();
    assert_eq!(canonical("top_k(40)"), "top_k(k=40) | dist(seed=-1)");
    assert_eq!(
        canonical("top_p(min_keep=3, p=.5) | greedy"),
        "top_p(p=0.5, min_keep=3) | greedy"
    );
    assert_eq!(canonical("temp(1) | dist(7)"), "temp(t=1.0) | dist(seed=7)");
    assert_eq!(
        canonical("temp(t=2.5E3)|greedy()"),
        "temp(t=2500.0) | greedy"
    );
    assert_eq!(
        canonical("logit_bias({13: -inf, 'Hello': +2.5,}) | mirostat"),
        "logit_bias(bias={13: -inf, \"Hello\": 2.5}) | mirostat(tau=5.0, eta=0.1, seed=-1)"
    );
    assert_eq!(
        canonical("dry\n  ( multiplier = 0.8 ,\n    breakers = [ \"\\n\" , ':' ] ,\n  )"),
        "dry(multiplier=0.8, breakers=[\"\\n\", \":\"], ignore_eos=false) | dist(seed=-1)"
    );
    assert_eq!(
        canonical("grammar('\\u{1F600}\\0\\t')"),
        "grammar(schema=\"😀\\0\\t\", strict=true) | dist(seed=-1)"
    );
    assert_eq!(
        canonical("penalty(1e-5, -0.0)"),
        "penalty(repeat=1e-5, frequency=-0.0, last_n=64) | dist(seed=-1)"
    );
}

#[test]
fn canonical_text_of_a_canonical_text_is_itself() {
    let registry = common::registry();
    for text in [
        "top_k",
        "temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)",
        "logit_bias({}) | greedy",
    ] {
        let once = PipelineSpec::parse(text, &registry).unwrap().to_string();
        let twice = PipelineSpec::parse(&once, &registry).unwrap().to_string();
        assert_eq!(once, twice);
    }
}
