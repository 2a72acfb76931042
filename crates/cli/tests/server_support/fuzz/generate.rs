//! [`Fuzzer`]: the generators of cases, one seed at a time.

use serde_json::{json, Map, Value};

use super::values::*;
use super::{Case, Framing, Rng, MAX_BODY};

/// The generator of cases for one seed.
#[derive(Debug, Clone)]
pub struct Fuzzer {
    seed: u64,
    model: String,
}

impl Fuzzer {
    /// A fuzzer for `seed`; `model` is the served model's name (requests name it, or
    /// another).
    pub fn new(seed: u64, model: &str) -> Self {
        Fuzzer {
            seed,
            model: model.to_string(),
        }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Case `index`: a pure function of the seed and the index.
    pub fn case(&self, index: u64) -> Case {
        let mut rng = Rng::new(self.seed ^ index.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        // Warm the state, so neighbouring indices diverge at once.
        rng.next_u64();
        let mut case = Case {
            index,
            kind: "completions",
            method: "POST".to_string(),
            path: "/v1/completions".to_string(),
            host: Some("{addr}".to_string()),
            content_type: Some("application/json".to_string()),
            headers: Vec::new(),
            framing: Framing::Exact,
            body: Vec::new(),
            hang_up_after: None,
        };
        let roll = rng.below(100);
        match roll {
            0..=29 => {
                let body = self.completion(&mut rng);
                case.body = body.to_string().into_bytes();
                self.maybe_hang_up(&mut rng, &mut case, &body);
            }
            30..=57 => {
                case.kind = "chat";
                case.path = "/v1/chat/completions".to_string();
                let body = self.chat(&mut rng);
                case.body = body.to_string().into_bytes();
                self.maybe_hang_up(&mut rng, &mut case, &body);
            }
            58..=62 => {
                case.kind = "tokenize";
                case.path = "/tokenize".to_string();
                case.body = self.tokenize(&mut rng).to_string().into_bytes();
            }
            63..=66 => {
                case.kind = "detokenize";
                case.path = "/detokenize".to_string();
                case.body = self.detokenize(&mut rng).to_string().into_bytes();
            }
            67..=84 => {
                case.kind = "mutated";
                case.path = rng.pick(POST_ROUTES).to_string();
                let body = match case.path.as_str() {
                    "/v1/completions" => self.completion(&mut rng),
                    "/v1/chat/completions" => self.chat(&mut rng),
                    "/tokenize" => self.tokenize(&mut rng),
                    _ => self.detokenize(&mut rng),
                };
                case.body = mutate(&mut rng, &body);
            }
            85..=87 => {
                case.kind = "nested";
                case.path = rng.pick(POST_ROUTES).to_string();
                case.body = nested(&mut rng);
            }
            88..=89 => {
                case.kind = "bytes";
                case.path = rng.pick(POST_ROUTES).to_string();
                let n = rng.below(512) as usize;
                case.body = (0..n).map(|_| rng.next_u64() as u8).collect();
            }
            90..=94 => {
                case.kind = "get";
                case.method = "GET".to_string();
                case.path = rng
                    .pick(&[
                        "/v1/models",
                        "/health",
                        "/metrics",
                        "/v1/models?x=1",
                        "/health/",
                    ])
                    .to_string();
                case.content_type = None;
                if rng.chance(0.2) {
                    case.body = b"{}".to_vec();
                }
            }
            _ => {
                case.kind = "route";
                let (method, path) = *rng.pick(&[
                    ("GET", "/v1/completions"),
                    ("GET", "/v1/chat/completions"),
                    ("PUT", "/v1/completions"),
                    ("DELETE", "/v1/models"),
                    ("POST", "/v1/models"),
                    ("POST", "/health"),
                    ("PATCH", "/tokenize"),
                    ("GET", "/detokenize"),
                    ("OPTIONS", "/v1/completions"),
                    ("POST", "/v1/embeddings"),
                    ("POST", "/v2/completions"),
                    ("GET", "/"),
                    ("GET", "/v1"),
                    ("POST", "/v1/completions/"),
                    ("POST", "//v1/completions"),
                    ("POST", "/v1/../v1/completions"),
                    ("POST", "/V1/COMPLETIONS"),
                    ("GET", "/%00"),
                    ("GET", "/nope?a=%ff"),
                    ("BREW", "/v1/completions"),
                ]);
                case.method = method.to_string();
                case.path = path.to_string();
                case.body = self.completion(&mut rng).to_string().into_bytes();
            }
        }
        self.headers(&mut rng, &mut case);
        case.body.truncate(MAX_BODY);
        if let Framing::Short(n) = case.framing {
            case.framing = Framing::Short(n.min(case.body.len()));
        }
        case
    }

    /// Sometimes a client that reads part of the answer and goes away.
    fn maybe_hang_up(&self, rng: &mut Rng, case: &mut Case, body: &Value) {
        let streamed = body.get("stream") == Some(&json!(true));
        if rng.chance(if streamed { 0.2 } else { 0.03 }) {
            case.hang_up_after = Some(rng.range(1, 1500) as usize);
        }
    }

    /// Header variants, for about one case in five.
    fn headers(&self, rng: &mut Rng, case: &mut Case) {
        if !rng.chance(0.2) {
            return;
        }
        for _ in 0..rng.range(1, 3) {
            match rng.below(12) {
                0 => {
                    case.content_type = rng
                        .pick(&[
                            None,
                            Some("text/plain"),
                            Some("application/json; charset=utf-8"),
                            Some("APPLICATION/JSON"),
                            Some("application/jsonx"),
                            Some("application/x-www-form-urlencoded"),
                            Some("multipart/form-data; boundary=x"),
                            Some(""),
                            Some("application/json; charset=latin-1"),
                            Some(" application/json ;;;"),
                        ])
                        .map(str::to_string)
                }
                1 => {
                    case.host = rng
                        .pick(&[
                            None,
                            Some("localhost"),
                            Some("127.0.0.2:1"),
                            Some("[::1]:80"),
                            Some("evil.example"),
                            Some("evil.example:{addr}"),
                            Some("localhost.evil.example"),
                            Some("app.localhost"),
                        ])
                        .map(str::to_string)
                }
                2 => {
                    let origin = *rng.pick(&[
                        "http://evil.example",
                        "null",
                        "http://{addr}",
                        "not an origin",
                    ]);
                    case.headers
                        .push(("Origin".to_string(), origin.to_string()));
                }
                3 => case.headers.push((
                    "Authorization".to_string(),
                    rng.pick(&["Bearer x", "bearer", "Basic Zm9vOmJhcg==", ""])
                        .to_string(),
                )),
                4 => case
                    .headers
                    .push(("Accept".to_string(), "text/event-stream".to_string())),
                5 => {
                    case.framing = Framing::Short(rng.range(1, 8) as usize);
                }
                6 => {
                    case.framing = Framing::Long(rng.range(1, 4) as usize);
                }
                7 | 8 => {
                    case.framing = Framing::Chunked(rng.range(1, 4096) as usize);
                }
                9 => case
                    .headers
                    .push(("Accept-Encoding".to_string(), "gzip, br".to_string())),
                10 => case.headers.push((
                    "Access-Control-Request-Method".to_string(),
                    "POST".to_string(),
                )),
                _ => case
                    .headers
                    .push(("X-Request-Id".to_string(), "x".repeat(200))),
            }
        }
        // The host placeholder in other headers.
        for (_, value) in &mut case.headers {
            if value.contains("{addr}") {
                *value = value.replace("{addr}", "127.0.0.1:1");
            }
        }
        if case.host.as_deref() == Some("evil.example:{addr}") {
            case.host = Some("evil.example:8080".to_string());
        }
    }

    /// Puts each field of `fields` into `body` with probability `p`.
    fn fields(&self, rng: &mut Rng, body: &mut Map<String, Value>, fields: &[&str], p: f64) {
        for &name in fields {
            if rng.chance(p) {
                let value = if rng.chance(0.15) {
                    weird(rng)
                } else {
                    self.value(rng, name)
                };
                body.insert(name.to_string(), value);
            }
        }
    }

    /// A completions body: a valid one (most of its fields drawn from their valid values),
    /// or one with fields of every kind of value.
    fn completion(&self, rng: &mut Rng) -> Value {
        if rng.chance(0.45) {
            return self.clean_completion(rng);
        }
        let mut body = Map::new();
        if rng.chance(0.95) {
            body.insert("prompt".to_string(), prompt(rng));
        }
        self.output_fields(rng, &mut body);
        self.fields(
            rng,
            &mut body,
            &["logprobs", "echo", "suffix", "best_of"],
            0.08,
        );
        if body.get("logprobs").is_some_and(Value::is_boolean) && rng.chance(0.5) {
            body.insert("logprobs".to_string(), json!(rng.below(6)));
        }
        self.sampling_fields(rng, &mut body);
        Value::Object(body)
    }

    /// A chat completions body: a valid one, or one with fields of every kind of value.
    fn chat(&self, rng: &mut Rng) -> Value {
        if rng.chance(0.45) {
            return self.clean_chat(rng);
        }
        let mut body = Map::new();
        if rng.chance(0.95) {
            body.insert("messages".to_string(), messages(rng));
        }
        self.output_fields(rng, &mut body);
        self.fields(
            rng,
            &mut body,
            &[
                "logprobs",
                "top_logprobs",
                "tools",
                "tool_choice",
                "parallel_tool_calls",
                "chat_template_kwargs",
                "add_generation_prompt",
            ],
            0.15,
        );
        if body.get("logprobs").is_some_and(Value::is_number) {
            body.insert("logprobs".to_string(), json!(true));
        }
        self.sampling_fields(rng, &mut body);
        Value::Object(body)
    }

    /// The output fields both endpoints share (`max_tokens`, `n`, `stop`, `stream`, …);
    /// `max_tokens` is nearly always small.
    fn output_fields(&self, rng: &mut Rng, body: &mut Map<String, Value>) {
        body.insert("max_tokens".to_string(), json!(rng.below(9)));
        self.fields(
            rng,
            body,
            &[
                "model",
                "max_tokens",
                "max_completion_tokens",
                "stop",
                "n",
                "seed",
                "stream",
                "stream_options",
                "ignore_eos",
                "skip_special_tokens",
                "logprobs_mode",
                "user",
            ],
            0.2,
        );
        if rng.chance(0.25) {
            body.insert("stream".to_string(), json!(true));
        }
        if rng.chance(0.03) {
            body.remove("max_tokens");
        }
    }

    /// The sampling fields.
    fn sampling_fields(&self, rng: &mut Rng, body: &mut Map<String, Value>) {
        let p = if rng.chance(0.5) { 0.04 } else { 0.15 };
        self.fields(
            rng,
            body,
            &[
                "sampler",
                "temperature",
                "dynatemp_range",
                "dynatemp_exponent",
                "top_p",
                "top_k",
                "min_p",
                "typical_p",
                "min_keep",
                "frequency_penalty",
                "presence_penalty",
                "repetition_penalty",
                "repeat_penalty",
                "repeat_last_n",
                "logit_bias",
                "xtc_threshold",
                "xtc_probability",
                "dry_multiplier",
                "dry_base",
                "dry_allowed_length",
                "dry_penalty_last_n",
                "dry_sequence_breakers",
                "top_n_sigma",
                "mirostat",
                "mirostat_tau",
                "mirostat_eta",
                "response_format",
            ],
            p,
        );
        if rng.chance(0.2) {
            body.insert("sampler".to_string(), sampler(rng));
        }
        if rng.chance(0.1) {
            body.insert("response_format".to_string(), response_format(rng));
        }
    }

    /// A completions body of valid fields (a grammar or a `logit_bias` may still leave no
    /// token to sample: a clean 400 too).
    fn clean_completion(&self, rng: &mut Rng) -> Value {
        let prompt = match rng.below(6) {
            0 => json!((0..rng.range(1, 8))
                .map(|_| rng.range(1, 250))
                .collect::<Vec<_>>()),
            1 => json!([rng.pick(TEXTS), "Once upon a time"]),
            2 => json!([[1, 2, 3], [4, 5]]),
            _ => json!(rng.pick(&PROMPTS)),
        };
        let mut body = Map::new();
        body.insert("prompt".to_string(), prompt);
        if rng.chance(0.3) {
            body.insert("logprobs".to_string(), json!(rng.below(6)));
        }
        self.clean_common(rng, &mut body);
        Value::Object(body)
    }

    /// A chat completions body of valid fields.
    fn clean_chat(&self, rng: &mut Rng) -> Value {
        let mut messages = Vec::new();
        if rng.chance(0.3) {
            messages.push(json!({"role": "system", "content": "You are brief."}));
        }
        for i in 0..rng.range(0, 2) * 2 + 1 {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let text = *rng.pick(&PROMPTS);
            let content = if rng.chance(0.2) {
                json!([{"type": "text", "text": text}])
            } else {
                json!(text)
            };
            messages.push(json!({"role": role, "content": content}));
        }
        let mut body = Map::new();
        body.insert("messages".to_string(), Value::Array(messages));
        if rng.chance(0.3) {
            body.insert(
                "tools".to_string(),
                json!([{"type": "function", "function": {"name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]}}}]),
            );
            let choice = match rng.below(4) {
                0 => json!("auto"),
                1 => json!("none"),
                2 => json!("required"),
                _ => json!({"type": "function", "function": {"name": "get_weather"}}),
            };
            body.insert("tool_choice".to_string(), choice);
            if rng.chance(0.3) {
                body.insert("parallel_tool_calls".to_string(), json!(false));
            }
        }
        if rng.chance(0.2) {
            body.insert("logprobs".to_string(), json!(true));
            body.insert("top_logprobs".to_string(), json!(rng.below(6)));
        }
        if rng.chance(0.1) {
            body.insert(
                "chat_template_kwargs".to_string(),
                json!({"enable_thinking": false}),
            );
        }
        if rng.chance(0.1) {
            body.insert("add_generation_prompt".to_string(), json!(rng.chance(0.5)));
        }
        self.clean_common(rng, &mut body);
        Value::Object(body)
    }

    /// The output and sampling fields of a valid body.
    fn clean_common(&self, rng: &mut Rng, body: &mut Map<String, Value>) {
        body.insert("max_tokens".to_string(), json!(rng.below(9)));
        let sampler = *rng.pick(&[
            "temp(0.7) | top_k(40)",
            "penalty(1.1) | temp(0.8) | top_p(0.9) | min_p(0.05)",
            "dry(0.8) | temp(1.0)",
            "grammar(regex=\"[a-z ]+\") | temp(0.7)",
            "grammar(lark=\"start: \\\"yes\\\" | \\\"no\\\"\")",
            "top_k(1)",
            "mirostat_v2(tau=3)",
            "no_repeat_ngram(2) | greedy",
        ]);
        let format = match rng.below(3) {
            0 => json!({"type": "json_object"}),
            1 => json!({"type": "text"}),
            _ => {
                json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema(rng)}})
            }
        };
        let streamed = rng.chance(0.35);
        let fields = [
            (0.2, "n", json!(rng.range(1, 4))),
            (0.5, "seed", json!(rng.below(1 << 20))),
            (if streamed { 1.0 } else { 0.0 }, "stream", json!(true)),
            (
                if streamed { 0.5 } else { 0.0 },
                "stream_options",
                json!({"include_usage": true}),
            ),
            (0.1, "stop", json!(["\n", " e"])),
            (0.1, "model", json!(self.model)),
            (0.1, "ignore_eos", json!(rng.chance(0.5))),
            (0.1, "skip_special_tokens", json!(rng.chance(0.5))),
            (0.1, "logprobs_mode", json!(rng.pick(&["processed", "raw"]))),
            (0.3, "temperature", json!(rng.below(150) as f64 / 100.0)),
            (0.2, "top_k", json!(rng.below(50))),
            (0.2, "top_p", json!(0.5 + rng.below(50) as f64 / 100.0)),
            (0.1, "min_p", json!(rng.below(20) as f64 / 100.0)),
            (0.1, "repetition_penalty", json!(1.1)),
            (0.1, "frequency_penalty", json!(0.5)),
            (0.1, "dry_multiplier", json!(0.8)),
            (0.05, "mirostat", json!(2)),
            (0.05, "xtc_probability", json!(0.5)),
            (0.1, "logit_bias", json!({"5": -100, "7": 5})),
            (0.2, "sampler", json!(sampler)),
            (0.1, "response_format", format),
        ];
        for (p, name, value) in fields {
            if rng.chance(p) {
                body.insert(name.to_string(), value);
            }
        }
    }

    /// A `/tokenize` body.
    fn tokenize(&self, rng: &mut Rng) -> Value {
        let mut body = Map::new();
        let key = if rng.chance(0.8) { "prompt" } else { "content" };
        if rng.chance(0.9) {
            body.insert(key.to_string(), json!(text(rng)));
        }
        self.fields(rng, &mut body, &["add_special_tokens", "model"], 0.3);
        Value::Object(body)
    }

    /// A `/detokenize` body.
    fn detokenize(&self, rng: &mut Rng) -> Value {
        let mut body = Map::new();
        if rng.chance(0.9) {
            body.insert("tokens".to_string(), tokens(rng));
        }
        self.fields(rng, &mut body, &["model"], 0.2);
        Value::Object(body)
    }

    /// A plausible value of the field `name` (valid, at an edge, or just past it).
    fn value(&self, rng: &mut Rng, name: &str) -> Value {
        match name {
            "model" => match rng.below(4) {
                0 | 1 => json!(self.model),
                2 => json!("gpt-4"),
                _ => json!(format!("{}x", self.model)),
            },
            "max_tokens" | "max_completion_tokens" => match rng.below(10) {
                0 => json!(u64::MAX),
                1 => json!(-1),
                2 => json!(1.5),
                _ => json!(rng.below(9)),
            },
            "n" => match rng.below(10) {
                0 => json!(0),
                1 => json!(1000),
                2 => json!(u64::MAX),
                3 => json!(17),
                _ => json!(rng.range(1, 4)),
            },
            "seed" => match rng.below(5) {
                0 => json!(u64::MAX),
                1 => json!(-1),
                _ => json!(rng.below(1000)),
            },
            "stop" => match rng.below(8) {
                0 => json!("\n"),
                1 => json!([" ", "e"]),
                2 => json!([]),
                3 => json!([""]),
                4 => json!("z".repeat(rng.range(100, 5000) as usize)),
                5 => json!((0..rng.range(5, 200))
                    .map(|i| format!("s{i}"))
                    .collect::<Vec<_>>()),
                6 => json!([1, 2]),
                _ => json!(rng.pick(TEXTS)),
            },
            "stream_options" => match rng.below(4) {
                0 => json!({"include_usage": true}),
                1 => json!({"include_usage": false}),
                2 => json!({"include_usage": "yes"}),
                _ => json!({"extra": 1}),
            },
            "logprobs_mode" => json!(rng.pick(&[
                "processed",
                "raw",
                "processed_logprobs",
                "raw_logprobs",
                "bogus",
                ""
            ])),
            "logprobs" => match rng.below(6) {
                0 => json!(true),
                1 => json!(false),
                2 => json!(20),
                3 => json!(21),
                _ => json!(rng.below(6)),
            },
            "top_logprobs" => match rng.below(5) {
                0 => json!(20),
                1 => json!(21),
                2 => json!(1000),
                _ => json!(rng.below(6)),
            },
            "echo"
            | "ignore_eos"
            | "skip_special_tokens"
            | "stream"
            | "parallel_tool_calls"
            | "add_generation_prompt"
            | "add_special_tokens" => json!(rng.chance(0.5)),
            "suffix" => json!(rng.pick(TEXTS)),
            "best_of" => json!(rng.range(0, 3)),
            "tools" => tools(rng),
            "tool_choice" => tool_choice(rng),
            "chat_template_kwargs" => template_kwargs(rng),
            "sampler" => sampler(rng),
            "response_format" => response_format(rng),
            "logit_bias" => logit_bias(rng),
            "dry_sequence_breakers" => match rng.below(5) {
                0 => json!([]),
                1 => json!([""]),
                2 => json!((0..rng.range(100, 400))
                    .map(|i| format!("b{i}"))
                    .collect::<Vec<_>>()),
                3 => json!([[1, 2]]),
                _ => json!(["\n", ":", "\"", "*"]),
            },
            "top_k" | "repeat_last_n" | "dry_penalty_last_n" | "min_keep"
            | "dry_allowed_length" | "mirostat" => match rng.below(8) {
                0 => json!(-1),
                1 => json!(0),
                2 => json!(u32::MAX),
                3 => json!(256),
                4 => json!(3),
                _ => json!(rng.below(50)),
            },
            _ => number(rng),
        }
    }
}
