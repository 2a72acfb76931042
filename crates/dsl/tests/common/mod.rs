//! A small registry for the tests, independent of the built-in stages' progress: one stage
//! per kind of parameter (float with range, int, string, bool, list, map, required), two
//! selectors, and a stage whose constructor rejects some values.
#![allow(dead_code)]

use sieve_core::{
    Args, BuildContext, Candidates, Context, Error, ParamKind, ParamSpec, Range, Registry, Sampler,
    StageEntry, StageInfo, Value,
};

/// A stage that leaves the candidates alone (or, as a selector, picks the first).
pub struct Stub {
    name: String,
    selects: bool,
}

impl Stub {
    /// A stub called `name` that selects the first candidate when `selects`.
    pub fn new(name: &str, selects: bool) -> Self {
        Stub {
            name: name.into(),
            selects,
        }
    }
}

impl Sampler for Stub {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.selects {
            candidates.select(0);
        }
        Ok(())
    }
}

fn stub(info: StageInfo) -> StageEntry {
    let (name, selects) = (info.name.clone(), info.selector);
    StageEntry::new(info, move |_args: &Args, _cx: &BuildContext<'_>| {
        Ok(Box::new(Stub {
            name: name.clone(),
            selects,
        }) as Box<dyn Sampler>)
    })
}

/// The test registry.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    let entries = vec![
        stub(StageInfo::builtin(
            "temp",
            "temperature",
            vec![ParamSpec::float(
                "t",
                1.0,
                Range::at_least(0.0),
                "divide logits by t",
            )],
        )),
        stub(StageInfo::builtin(
            "top_k",
            "keep k",
            vec![ParamSpec::int(
                "k",
                40,
                Range::closed(0.0, u32::MAX as f64),
                "number of tokens to keep; 0 keeps all",
            )],
        )),
        stub(StageInfo::builtin(
            "top_p",
            "nucleus",
            vec![
                ParamSpec::float(
                    "p",
                    0.9,
                    Range::closed(0.0, 1.0),
                    "cumulative probability to keep",
                ),
                ParamSpec::int(
                    "min_keep",
                    1,
                    Range::at_least(1.0),
                    "keep at least this many",
                ),
            ],
        )),
        stub(StageInfo::builtin(
            "min_p",
            "min-p",
            vec![ParamSpec::float(
                "p",
                0.05,
                Range::closed(0.0, 1.0),
                "minimum probability relative to the top",
            )],
        )),
        stub(StageInfo::builtin(
            "penalty",
            "repetition penalty",
            vec![
                ParamSpec::float(
                    "repeat",
                    1.0,
                    Range::greater_than(0.0),
                    "CTRL repetition penalty",
                ),
                ParamSpec::float(
                    "frequency",
                    0.0,
                    Range::closed(-2.0, 2.0),
                    "frequency penalty",
                ),
                ParamSpec::int(
                    "last_n",
                    64,
                    Range::at_least(-1.0),
                    "window; -1 = whole history",
                ),
            ],
        )),
        stub(StageInfo::builtin(
            "dry",
            "don't repeat yourself",
            vec![
                ParamSpec::float("multiplier", 0.0, Range::at_least(0.0), "penalty strength"),
                ParamSpec::new(
                    "breakers",
                    ParamKind::List,
                    "strings that break a repetition",
                )
                .with_default(Value::List(vec![
                    Value::Str("\n".into()),
                    Value::Str(":".into()),
                ])),
                ParamSpec::new("ignore_eos", ParamKind::Bool, "skip end-of-sequence tokens")
                    .with_default(Value::Bool(false)),
            ],
        )),
        stub(StageInfo::builtin(
            "logit_bias",
            "add a bias per token",
            vec![ParamSpec::new(
                "bias",
                ParamKind::Map,
                "token id or text to bias",
            )],
        )),
        stub(StageInfo::builtin(
            "grammar",
            "constrain to a grammar",
            vec![
                ParamSpec::new("schema", ParamKind::Str, "a JSON schema"),
                ParamSpec::new("strict", ParamKind::Bool, "reject unknown keys")
                    .with_default(Value::Bool(true)),
            ],
        )),
        stub(StageInfo::builtin("greedy", "pick the most likely", vec![]).selector()),
        stub(StageInfo::builtin("dist", "draw", vec![ParamSpec::seed()]).selector()),
        stub(
            StageInfo::builtin(
                "mirostat",
                "mirostat v2",
                vec![
                    ParamSpec::float("tau", 5.0, Range::at_least(0.0), "target surprise"),
                    ParamSpec::float("eta", 0.1, Range::greater_than(0.0), "learning rate"),
                    ParamSpec::seed(),
                ],
            )
            .selector(),
        ),
        StageEntry::new(
            StageInfo::builtin(
                "picky",
                "a constructor with opinions",
                vec![
                    ParamSpec::float("x", 0.5, Range::closed(0.0, 1.0), "anything but 0.25"),
                    ParamSpec::float("y", 0.25, Range::closed(0.0, 1.0), "anything but 0.25"),
                ],
            ),
            |args, _| {
                for name in ["x", "y"] {
                    if args.f64(name)? == 0.25 {
                        return Err(args.invalid(name, "0.25 is not allowed"));
                    }
                }
                Ok(Box::new(Stub {
                    name: "picky".into(),
                    selects: false,
                }) as Box<dyn Sampler>)
            },
        ),
        StageEntry::new(
            StageInfo::builtin("broken", "never builds", vec![]),
            |_, _| {
                Err(Error::Stage {
                    stage: "broken".into(),
                    message: "cannot be built".into(),
                })
            },
        ),
    ];
    for e in entries {
        r.register(e).expect("distinct names");
    }
    r
}
