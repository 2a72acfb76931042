//! The pipeline fuzzer: seeded random inputs run through parse → validate → build → sample,
//! each inside `catch_unwind`, so that any panic is reported with the input that caused it.
//!
//! Inputs come from several generators, picked at random for each case:
//!
//! - random bytes (made valid UTF-8) and soups of the language's tokens;
//! - valid pipelines over every stage and parameter of the registry it is given (names,
//!   aliases, parameter names and kinds all read from the registry), with values that are
//!   in range, at the edges, or extreme (`±inf`, `1e308`, `-0.0`, `i64::MIN`/`MAX`,
//!   2^53 ± 1, `u32::MAX` ± 1, huge exponents), given by position or by name;
//! - mutations of such pipelines (bytes deleted, duplicated, swapped, inserted; numbers
//!   replaced by extreme ones);
//! - nesting near and past [`sieve_dsl::MAX_NESTING`], balanced or not;
//! - long inputs (thousands of stages, very long names, numbers and strings).
//!
//! Every case also draws the logits it runs on (a small vocabulary with NaN, `±inf`, `±3e38`,
//! subnormals and `-0.0` mixed in), a history (sometimes with ids past the vocabulary), the
//! run's seed and whether a vocabulary is known. A case is a pure function of the fuzzer's
//! seed and the case's index, so [`Fuzzer::case`] replays any case exactly.
//!
//! The example `fuzz` (`cargo run --release -p sieve-tests --example fuzz -- --cases 1000000
//! --seed 1`) runs many cases; the test `fuzz_smoke` runs a few thousand on every
//! `cargo test`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use sieve_core::{
    BuildContext, Candidates, Context, ParamKind, ParamSpec, Registry, SieveRng, StageInfo, Vocab,
};

/// The longest number of steps one case samples.
const MAX_STEPS: usize = 4;

/// One generated input: the pipeline text and what it runs on.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case's index (with the fuzzer's seed, all it takes to replay it).
    pub index: u64,
    /// The pipeline text.
    pub source: String,
    /// The dense logits of every step.
    pub logits: Vec<f32>,
    /// The history (all of it prompt).
    pub history: Vec<u32>,
    /// The run's seed (`BuildContext::seed`).
    pub seed: u64,
    /// Whether a vocabulary (one token per logit) is known to the build and the run.
    pub with_vocab: bool,
    /// How many steps to sample (each accepted and appended to the history).
    pub steps: usize,
}

/// How far a case got; a panic is not an outcome but a [`Panic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The text was refused by the parser or the validator.
    Refused,
    /// The spec was valid but a stage's constructor refused it.
    BuildFailed,
    /// The pipeline was built and sampled (each step either chose a token or returned an
    /// error).
    Ran,
}

/// A case that panicked, with the panic's message.
#[derive(Debug, Clone)]
pub struct Panic {
    /// The case.
    pub case: Case,
    /// The panic's payload, when it was a string.
    pub message: String,
}

/// The generator of cases for one registry and one seed.
#[derive(Debug)]
pub struct Fuzzer {
    seed: u64,
    stages: Vec<StageInfo>,
    names: Vec<String>,
    params: Vec<String>,
}

/// Interesting floats, as pipeline text.
const EXTREME_FLOATS: &[&str] = &[
    "inf",
    "-inf",
    "+inf",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "-1e309",
    "1e-308",
    "5e-324",
    "1e-400",
    "-0.0",
    "0.0",
    "-0.",
    ".0",
    "1e999999999999999999999",
    "1e-999999999999999999999",
    "3.4028235e38",
    "3.5e38",
    "-3.5e38",
    "1.0000000000000002",
    "0.9999999999999999",
    "9007199254740992.0",
    "9007199254740993.0",
    "4294967295.0",
    "4294967296.0",
    "0.5",
    "1.0",
    "2.0",
    "nan",
    "NaN",
    "1e",
    "1e+",
    "..5",
];

/// Interesting integers, as pipeline text.
const EXTREME_INTS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "+7",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999999999",
    "9007199254740991",
    "9007199254740992",
    "9007199254740993",
    "-9007199254740993",
    "4294967295",
    "4294967296",
    "2147483647",
    "2147483648",
    "65535",
    "65536",
    "18446744073709551615",
    "18446744073709551616",
];

/// Tokens of the language, for token soups and insertions.
const TOKENS: &[&str] = &[
    "(",
    ")",
    "|",
    ",",
    "=",
    "[",
    "]",
    "{",
    "}",
    ":",
    "\"",
    "'",
    " ",
    "\n",
    "\t",
    "\\",
    "\\u{",
    "\\u{110000}",
    "\\u{D800}",
    "true",
    "false",
    "-",
    "+",
    ".",
    "e",
    "E",
    "#",
    "\0",
    "é",
    "😀",
    "\u{202e}",
    "\r\n",
];

impl Fuzzer {
    /// A fuzzer over the stages of `registry`, drawing cases from `seed`.
    pub fn new(registry: &Registry, seed: u64) -> Self {
        let stages: Vec<StageInfo> = registry.iter().map(|e| e.info.clone()).collect();
        let mut names: Vec<String> = Vec::new();
        let mut params: Vec<String> = Vec::new();
        for info in &stages {
            names.push(info.name.clone());
            names.extend(info.aliases.iter().cloned());
            params.extend(info.params.iter().map(|p| p.name.clone()));
        }
        params.sort();
        params.dedup();
        Fuzzer {
            seed,
            stages,
            names,
            params,
        }
    }

    /// The case with this index (the same for the same registry, seed and index).
    pub fn case(&self, index: u64) -> Case {
        let mut rng = SieveRng::new(
            self.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            "fuzz",
        );
        let r = &mut rng;
        let source = match below(r, 100) {
            0..=7 => random_bytes(r),
            8..=17 => self.token_soup(r),
            18..=52 => {
                // Half of them clean (every value valid), so that many cases get to run.
                let clean = below(r, 2) == 0;
                self.pipeline(r, clean)
            }
            53..=87 => {
                let mut text = self.pipeline(r, false);
                for _ in 0..1 + below(r, 3) {
                    text = self.mutate(r, &text);
                }
                text
            }
            88..=94 => self.nesting(r),
            _ => self.long(r),
        };
        let (logits, history) = logits_and_history(r);
        Case {
            index,
            source,
            logits,
            history,
            seed: r.next_u64(),
            with_vocab: below(r, 4) == 0,
            steps: 1 + below(r, MAX_STEPS as u64) as usize,
        }
    }

    fn stage_name(&self, r: &mut SieveRng) -> String {
        match below(r, 20) {
            0 => ident(r),
            1 => {
                // A near miss: one byte changed.
                let mut name = pick(r, &self.names).clone().into_bytes();
                let i = below(r, name.len() as u64) as usize;
                name[i] = b'a' + below(r, 26) as u8;
                String::from_utf8_lossy(&name).into_owned()
            }
            _ => pick(r, &self.names).clone(),
        }
    }

    /// A value for a parameter of `kind`, usually in its range, sometimes at its edges or far
    /// outside, sometimes of another type.
    fn value(&self, r: &mut SieveRng, p: &ParamSpec, depth: usize, clean: bool) -> String {
        if !clean && below(r, 12) == 0 {
            return any_value(r, depth);
        }
        match p.kind {
            ParamKind::Float | ParamKind::Int => number_for(r, p, clean),
            ParamKind::Bool => pick(r, &["true", "false"]).to_string(),
            ParamKind::Str => string_literal(r),
            ParamKind::List => {
                let n = below(r, 6) as usize;
                let items: Vec<String> = (0..n).map(|_| element(r, depth + 1)).collect();
                format!("[{}]", items.join(", "))
            }
            ParamKind::Map => {
                let n = below(r, 6) as usize;
                let items: Vec<String> = (0..n)
                    .map(|_| {
                        let key = match below(r, 3) {
                            0 => string_literal(r),
                            1 => pick(r, EXTREME_INTS).to_string(),
                            _ => below(r, 80).to_string(),
                        };
                        format!("{key}: {}", element(r, depth + 1))
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    /// One stage with some of its arguments, by position, by name, or both.
    fn stage(&self, r: &mut SieveRng, info: &StageInfo, clean: bool) -> String {
        let name = if !clean && below(r, 10) == 0 {
            self.stage_name(r)
        } else {
            info.name.clone()
        };
        let required = info.params.iter().any(|p| p.default.is_none());
        if info.params.is_empty() || (below(r, 8) == 0 && !(clean && required)) {
            return match below(r, 3) {
                0 => name,
                1 => format!("{name}()"),
                _ if clean => format!("{name}()"),
                _ => format!("{name}({})", any_value(r, 0)),
            };
        }
        let mut args = Vec::new();
        let positional = below(r, 1 + info.params.len() as u64) as usize;
        for p in &info.params[..positional] {
            args.push(self.value(r, p, 0, clean));
        }
        for p in &info.params[positional..] {
            if below(r, 2) == 0 || (clean && p.default.is_none()) {
                let pname = if !clean && below(r, 15) == 0 {
                    pick(r, &self.params).clone()
                } else {
                    p.name.clone()
                };
                args.push(format!("{pname}={}", self.value(r, p, 0, clean)));
            }
        }
        if !clean && below(r, 15) == 0 {
            // An extra argument: too many positionals, or a parameter given twice.
            let p = pick(r, &info.params);
            args.push(format!("{}={}", p.name, self.value(r, p, 0, clean)));
        }
        let comma = if below(r, 6) == 0 { "," } else { "" };
        format!("{name}({}{comma})", args.join(", "))
    }

    /// A pipeline of 1–6 stages from the registry, ending in a selector about half the time;
    /// when `clean`, with names and numbers that are all valid (lists and maps may not be).
    fn pipeline(&self, r: &mut SieveRng, clean: bool) -> String {
        let n = 1 + below(r, 6) as usize;
        let body: Vec<&StageInfo> = self.stages.iter().filter(|s| !s.selector).collect();
        let mut parts: Vec<String> = (0..n)
            .map(|_| {
                let info = if clean && !body.is_empty() {
                    *pick(r, &body)
                } else {
                    pick(r, &self.stages)
                };
                self.stage(r, info, clean)
            })
            .collect();
        if below(r, 2) == 0 {
            let selectors: Vec<&StageInfo> = self.stages.iter().filter(|s| s.selector).collect();
            if !selectors.is_empty() {
                let info = *pick(r, &selectors);
                parts.push(self.stage(r, info, clean));
            }
        }
        let sep = pick(r, &[" | ", "|", "\n| ", " |\n\t"]);
        parts.join(sep)
    }

    /// `text` with one mutation.
    fn mutate(&self, r: &mut SieveRng, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        let len = bytes.len() as u64;
        let at = |r: &mut SieveRng| below(r, len + 1) as usize;
        match below(r, 7) {
            0 if len > 0 => {
                let a = at(r);
                let b = (a + 1 + below(r, 8) as usize).min(bytes.len());
                bytes.drain(a.min(b)..b);
            }
            1 => {
                let a = at(r);
                let token: &str = match below(r, 4) {
                    0 => pick::<&str>(r, EXTREME_FLOATS),
                    1 => pick::<&str>(r, EXTREME_INTS),
                    2 => pick(r, &self.names).as_str(),
                    _ => pick::<&str>(r, TOKENS),
                };
                bytes.splice(a..a, token.bytes());
            }
            2 if len > 0 => {
                let a = at(r).min(bytes.len() - 1);
                let b = (a + 1 + below(r, 16) as usize).min(bytes.len());
                let piece = bytes[a..b].to_vec();
                bytes.splice(b..b, piece);
            }
            3 if len > 1 => {
                let a = below(r, len) as usize;
                let b = below(r, len) as usize;
                bytes.swap(a, b);
            }
            4 if len > 0 => {
                let a = below(r, len) as usize;
                bytes[a] = r.next_u64() as u8;
            }
            _ => {
                // Replace a run of digits with an extreme number.
                let starts: Vec<usize> = (0..bytes.len())
                    .filter(|&i| {
                        bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit())
                    })
                    .collect();
                if !starts.is_empty() {
                    let a = *pick(r, &starts);
                    let mut b = a;
                    while b < bytes.len() && (bytes[b].is_ascii_digit() || bytes[b] == b'.') {
                        b += 1;
                    }
                    let number = if below(r, 2) == 0 {
                        pick(r, EXTREME_FLOATS)
                    } else {
                        pick(r, EXTREME_INTS)
                    };
                    bytes.splice(a..b, number.bytes());
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Lists and maps nested near and past the limit, balanced or not.
    fn nesting(&self, r: &mut SieveRng) -> String {
        let limit = sieve_dsl::MAX_NESTING;
        let depth = match below(r, 4) {
            0 => limit.saturating_sub(2) + below(r, 5) as usize,
            1 => below(r, limit as u64 + 1) as usize,
            2 => 1000 + below(r, 100_000) as usize,
            _ => limit + below(r, 64) as usize,
        };
        let (open, close) = match below(r, 3) {
            0 => ("[", "]"),
            1 => ("{1: ", "}"),
            _ => ("[{\"a\": ", "}]"),
        };
        let stage = {
            let info = pick(r, &self.stages);
            info.name.clone()
        };
        let closing = if below(r, 4) == 0 {
            below(r, depth as u64 + 2) as usize
        } else {
            depth
        };
        format!(
            "{stage}({}{}{})",
            open.repeat(depth),
            element(r, 0),
            close.repeat(closing)
        )
    }

    /// Long inputs: many stages, long names, long numbers, long strings, much whitespace.
    fn long(&self, r: &mut SieveRng) -> String {
        let n = 1000 + below(r, 10_000) as usize;
        match below(r, 6) {
            0 => {
                let stage = self.pipeline(r, true);
                vec![stage; n / 20].join(" | ")
            }
            1 => format!("{}(1)", "a".repeat(n * 10)),
            2 => format!("top_k({})", "9".repeat(n)),
            3 => format!("temp(0.{}1)", "0".repeat(n)),
            4 => format!("logit_bias({{\"{}\": 1}})", "x".repeat(n * 10)),
            _ => format!("{}greedy{}", " \n\t".repeat(n), " ".repeat(n)),
        }
    }

    fn token_soup(&self, r: &mut SieveRng) -> String {
        let n = below(r, 40) as usize;
        let mut text = String::new();
        for _ in 0..n {
            match below(r, 6) {
                0 => text.push_str(pick(r, &self.names).as_str()),
                1 => text.push_str(pick(r, &self.params).as_str()),
                2 => text.push_str(pick::<&str>(r, EXTREME_FLOATS)),
                3 => text.push_str(pick::<&str>(r, EXTREME_INTS)),
                _ => text.push_str(pick::<&str>(r, TOKENS)),
            }
        }
        text
    }
}

/// Runs `case` with `registry`, catching any panic.
///
/// # Errors
/// The [`Panic`], with the case and the panic's message.
pub fn run_case(registry: &Registry, case: &Case) -> Result<Outcome, Box<Panic>> {
    catch_unwind(AssertUnwindSafe(|| run_unguarded(registry, case))).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".to_string());
        Box::new(Panic {
            case: case.clone(),
            message,
        })
    })
}

fn run_unguarded(registry: &Registry, case: &Case) -> Outcome {
    let vocab = case.with_vocab.then(|| {
        let tokens = (0..case.logits.len())
            .map(|i| match i % 4 {
                0 => format!("t{i}").into_bytes(),
                1 => vec![b' ', b'a' + (i % 26) as u8],
                2 => vec![0xff, i as u8],
                _ => Vec::new(),
            })
            .collect();
        Vocab::new(tokens, vec![0])
    });
    let Ok(spec) = sieve_dsl::PipelineSpec::parse(&case.source, registry) else {
        return Outcome::Refused;
    };
    // The canonical text must parse back to the same spec.
    let canonical = spec.to_string();
    match sieve_dsl::PipelineSpec::parse(&canonical, registry) {
        Ok(again) if again == spec => {}
        Ok(again) => panic!("canonical text `{canonical}` parses to another spec: {again}"),
        Err(d) => panic!("canonical text `{canonical}` is refused: {d}"),
    }
    let cx = BuildContext {
        seed: case.seed,
        vocab: vocab.as_ref(),
    };
    let Ok(compiled) = sieve_dsl::compile(&case.source, registry, &cx) else {
        return Outcome::BuildFailed;
    };
    let mut pipeline = compiled.pipeline;
    let mut history = case.history.clone();
    let prompt_len = history.len();
    for step in 0..case.steps {
        let mut candidates = Candidates::from_logits(&case.logits);
        let context = Context {
            history: &history,
            prompt_len,
            vocab: vocab.as_ref(),
            step,
        };
        match pipeline.sample(&mut candidates, &context) {
            Ok(token) => {
                assert!(
                    (token as usize) < case.logits.len(),
                    "token {token} outside a vocabulary of {}",
                    case.logits.len()
                );
                pipeline.accept(token);
                history.push(token);
            }
            Err(e) => {
                // Every error must print (and not panic while printing).
                assert!(!e.to_string().is_empty());
                break;
            }
        }
    }
    Outcome::Ran
}

/// A uniform draw in `0..n` (`n > 0`).
fn below(r: &mut SieveRng, n: u64) -> u64 {
    r.next_u64() % n.max(1)
}

fn pick<'a, T>(r: &mut SieveRng, items: &'a [T]) -> &'a T {
    &items[below(r, items.len() as u64) as usize]
}

fn random_bytes(r: &mut SieveRng) -> String {
    let n = below(r, 64) as usize;
    let bytes: Vec<u8> = (0..n)
        .map(|_| match below(r, 3) {
            // Mostly printable ASCII, which gets further into the parser.
            0 | 1 => 0x20 + below(r, 0x5f) as u8,
            _ => r.next_u64() as u8,
        })
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn ident(r: &mut SieveRng) -> String {
    let n = 1 + below(r, 12) as usize;
    (0..n)
        .map(|i| {
            let c = below(r, 37) as u8;
            match c {
                0..=25 => (b'a' + c) as char,
                26..=35 if i > 0 => (b'0' + c - 26) as char,
                _ => '_',
            }
        })
        .collect()
}

fn string_literal(r: &mut SieveRng) -> String {
    let n = below(r, 12) as usize;
    let mut s = String::from("\"");
    for _ in 0..n {
        match below(r, 10) {
            0 => s.push_str(pick::<&str>(
                r,
                &["\\n", "\\t", "\\\\", "\\\"", "\\0", "\\u{1F600}"],
            )),
            1 => s.push_str(pick::<&str>(r, &["é", "😀", " ", "'", "\u{0}"])),
            _ => s.push((b'a' + below(r, 26) as u8) as char),
        }
    }
    s.push('"');
    s
}

/// A number for a numeric parameter: inside its range, at an edge (exactly, or just past
/// it), or extreme.
fn number_for(r: &mut SieveRng, p: &ParamSpec, clean: bool) -> String {
    let int = p.kind == ParamKind::Int;
    let range = p.range.unwrap_or(sieve_core::Range::closed(-1e9, 1e9));
    let format = |x: f64| -> String {
        if int && x.is_finite() && x.abs() < 9.2e18 {
            format!("{}", x as i64)
        } else if x.is_infinite() {
            if x > 0.0 { "inf" } else { "-inf" }.to_string()
        } else {
            format!("{x:?}")
        }
    };
    if clean {
        return match below(r, 8) {
            0 if range.min_inclusive && range.min.is_finite() => format(range.min),
            1 if range.max_inclusive && range.max.is_finite() => format(range.max),
            _ => {
                // Strictly inside (open bounds stay open): the midpoint of a random point and
                // the far side of the interval.
                let lo = range.min.max(-1e6);
                let hi = range.max.min(1e6);
                let x = lo + (hi - lo) * (0.05 + 0.9 * r.next_f64());
                if int {
                    format(x.round().clamp(lo.ceil(), hi.floor()))
                } else {
                    format(x)
                }
            }
        };
    }
    match below(r, 10) {
        0..=3 => {
            let lo = range.min.max(-1e6);
            let hi = range.max.min(1e6);
            format(lo + (hi - lo) * r.next_f64())
        }
        4 => format(range.min),
        5 => format(range.max),
        6 => {
            let edge = if below(r, 2) == 0 {
                range.min
            } else {
                range.max
            };
            let step = if int {
                1.0
            } else {
                edge.abs() * 1e-15 + 1e-300
            };
            format(edge + if below(r, 2) == 0 { step } else { -step })
        }
        7 => pick(r, EXTREME_INTS).to_string(),
        _ => pick(r, EXTREME_FLOATS).to_string(),
    }
}

/// A list or map element: any scalar, or (rarely) a nested list or map.
fn element(r: &mut SieveRng, depth: usize) -> String {
    match below(r, 8) {
        0 => below(r, 100).to_string(),
        1 => format!("{:?}", (r.next_f64() - 0.5) * 20.0),
        2 => pick(r, EXTREME_FLOATS).to_string(),
        3 => pick(r, EXTREME_INTS).to_string(),
        _ => any_value(r, depth),
    }
}

fn any_value(r: &mut SieveRng, depth: usize) -> String {
    match below(r, if depth < 4 { 9 } else { 7 }) {
        0 => pick(r, EXTREME_INTS).to_string(),
        1 => pick(r, EXTREME_FLOATS).to_string(),
        2 => below(r, 50).to_string(),
        3 => format!("{:?}", r.next_f64()),
        4 => pick(r, &["true", "false"]).to_string(),
        5 | 6 => string_literal(r),
        7 => {
            let n = below(r, 4) as usize;
            let items: Vec<String> = (0..n).map(|_| element(r, depth + 1)).collect();
            format!("[{}]", items.join(", "))
        }
        _ => {
            let n = below(r, 4) as usize;
            let items: Vec<String> = (0..n)
                .map(|_| format!("{}: {}", below(r, 50), element(r, depth + 1)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// Logits over a vocabulary of 1–64 tokens with NaN, `±inf`, huge, subnormal and `-0.0`
/// values mixed in (sometimes all of them one kind), and a history of up to 24 tokens,
/// sometimes with ids past the vocabulary.
fn logits_and_history(r: &mut SieveRng) -> (Vec<f32>, Vec<u32>) {
    let n = 1 + below(r, 64) as usize;
    let odd = below(r, 4);
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        3e38,
        -3e38,
        f32::MIN_POSITIVE,
        1e-45,
        -0.0,
        0.0,
        1e30,
        -1e30,
    ];
    let uniform = *pick(r, &special);
    let logits = (0..n)
        .map(|_| match odd {
            0 => (r.next_f64() * 20.0 - 10.0) as f32,
            1 if below(r, 5) == 0 => *pick(r, &special),
            1 => (r.next_f64() * 20.0 - 10.0) as f32,
            2 => uniform,
            _ => *pick(r, &special),
        })
        .collect();
    let h = below(r, 25) as usize;
    let wild = below(r, 6) == 0;
    let history = (0..h)
        .map(|_| {
            if wild && below(r, 3) == 0 {
                *pick(r, &[n as u32, u32::MAX, u32::MAX - 1, 1 << 31])
            } else {
                below(r, n as u64) as u32
            }
        })
        .collect();
    (logits, history)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_replay_exactly() {
        let registry = sieve_samplers::builtin_registry();
        let fuzzer = Fuzzer::new(&registry, 7);
        for i in 0..50 {
            let (a, b) = (fuzzer.case(i), fuzzer.case(i));
            assert_eq!(a.source, b.source);
            assert_eq!(a.history, b.history);
            assert_eq!(a.seed, b.seed);
            let bits = |l: &[f32]| l.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.logits), bits(&b.logits));
        }
    }
}
