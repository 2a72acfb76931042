//! The values the generators draw from: stages, prompts, texts, weird JSON, messages, tools,
//! schemas, pipelines, and byte-level mutations of a body.

use serde_json::{json, Map, Value};

use super::{Rng, VOCAB_GUESS};

/// Stages (with arguments valid, odd or wrong) that pipelines are made of.
pub(super) const STAGES: &[&str] = &[
    "temp(0.7)",
    "temp(t=0)",
    "temp(-1)",
    "temp(1e308)",
    "temp(inf)",
    "temp(nan)",
    "temp(0.8, range=0.5, exponent=2)",
    "top_k(40)",
    "top_k(0)",
    "top_k(-3)",
    "top_k(4294967296)",
    "top_k(k=[1])",
    "top_p(0.9)",
    "top_p(1.5)",
    "top_p(0.5, min_keep=0)",
    "min_p(0.05, min_keep=3)",
    "typical(0.5)",
    "xtc(0.1, 0.5)",
    "xtc(threshold=0.3, probability=1, seed=9007199254740993)",
    "penalty(1.1)",
    "penalty(repeat=0)",
    "penalty(frequency=-2, presence=2, last_n=0)",
    "no_repeat_ngram(2)",
    "no_repeat_ngram(1)",
    "epsilon(0.01)",
    "eta(0.001)",
    "logit_bias({5: -inf})",
    "logit_bias({\"a\": 2})",
    "logit_bias({})",
    "logit_bias({999999: 1})",
    "mirostat(5, 0.1)",
    "mirostat_v2(tau=3)",
    "mirostat(m=1)",
    "greedy",
    "dist",
    "dist(seed=3)",
    "dist(seed=-2)",
    "dry(0.8)",
    "dry(multiplier=0.8, base=1.75, allowed_length=2, breakers=[\"\\n\", \":\"])",
    "dry(base=0.5)",
    "dry(breakers=[[1, 2], [3]])",
    "dry(breakers=[])",
    "dry(breakers=[\"\"])",
    "dry(breakers=[[]])",
    "dry(last_n=-5)",
    "dry(allowed_length=4294967295)",
    "dry(1e308, 1e308)",
    "grammar(regex=\"[0-9]+\")",
    "grammar(regex=\"(\")",
    "grammar(regex=\"\")",
    "grammar(lark=\"start: \\\"a\\\"+\")",
    "grammar(lark=\"start: start\")",
    "grammar(lark=\"start: \")",
    "grammar(json_schema=\"{\\\"type\\\": \\\"integer\\\"}\")",
    "grammar(json_schema=\"{\\\"type\\\": \\\"object\\\", \\\"properties\\\": {\\\"a\\\": {\\\"type\\\": \\\"string\\\"}}}\")",
    "grammar(json_schema=\"{\")",
    "grammar(json_schema=\"{\\\"$ref\\\": \\\"#\\\"}\")",
    "grammar(json_schema=\"false\")",
    "grammar()",
    "grammar(file=\"/etc/passwd\")",
    "grammar(file=\"x.lark\")",
    "grammar(regex=\"a\", lark=\"start: \\\"b\\\"\")",
    "top_n_sigma(1.0)",
    "nope(1)",
    "temp",
    "temp()",
    "temp(0.7",
    "temp(\"hot\")",
    "temp(t=1, t=2)",
    "temp(1,)",
    "ＴＥＭＰ(1)",
];

/// Ordinary prompts.
pub(super) const PROMPTS: [&str; 4] = [
    "Once upon a time",
    "The little fox",
    "She opened the door and",
    "Tell me a story.",
];

/// Texts for prompts, messages and stop strings.
pub(super) const TEXTS: &[&str] = &[
    "Once upon a time",
    "",
    " ",
    "Hello, world!",
    "<|endoftext|>",
    "</s>",
    "<s>",
    "<|im_start|>user\nhi<|im_end|>",
    "{\"a\": 1}",
    "\n\n\n",
    "日本語のテキスト",
    "emoji 🦀🦀",
    "\u{0}\u{1}\u{7f}",
    "\u{feff}bom",
    "\u{202e}rtl",
    "a\\u0000b",
    "{{ raise_exception('x') }}",
    "{% for x in range(100000000) %}x{% endfor %}",
];

/// Values of the wrong type, or at the edges of every type.
pub(super) fn weird(rng: &mut Rng) -> Value {
    match rng.below(30) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(false),
        3 => json!(u64::MAX),
        4 => json!(i64::MIN),
        5 => json!(1e308),
        6 => json!(-1e308),
        7 => json!(5e-324),
        8 => json!(-0.0),
        9 => json!(0),
        10 => json!(-1),
        11 => json!(9_007_199_254_740_993u64),
        12 => json!(4_294_967_296u64),
        13 => json!(0.5),
        14 => json!("NaN"),
        15 => json!("inf"),
        16 => json!("-Infinity"),
        17 => json!("1"),
        18 => json!(""),
        19 => json!([]),
        20 => json!({}),
        21 => json!([1, "a", null]),
        22 => json!({"a": {"b": [1]}}),
        23 => json!("x".repeat(rng.range(100, 5000) as usize)),
        24 => json!(rng.pick(TEXTS)),
        25 => json!(rng.next_u64() as i64),
        26 => json!(rng.unit() * 4.0 - 2.0),
        27 => json!(2),
        28 => json!([[[[]]]]),
        _ => json!(100),
    }
}

/// The POST routes.
pub(super) const POST_ROUTES: &[&str] = &[
    "/v1/completions",
    "/v1/chat/completions",
    "/tokenize",
    "/detokenize",
];

/// A number for a float field: ordinary, at an edge, or past it.
pub(super) fn number(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => json!(0),
        1 => json!(1),
        2 => json!(-1),
        3 => json!(1e308),
        4 => json!(-1e308),
        5 => json!(5e-324),
        6 => json!(-0.0),
        7 => json!(100),
        8 => json!(2),
        _ => json!((rng.unit() * 2.0 * 1000.0).round() / 1000.0),
    }
}

/// A text: short, special, unicode, or long.
pub(super) fn text(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => "the end ".repeat(rng.range(10, 400) as usize),
        1 => (0..rng.range(1, 40))
            .map(|_| char::from_u32(rng.range(1, 0x2FFFF) as u32).unwrap_or('?'))
            .collect(),
        _ => rng.pick(TEXTS).to_string(),
    }
}

/// Token ids: within the vocabulary, past it, or not ids at all.
pub(super) fn tokens(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => json!([]),
        1 => json!([u32::MAX]),
        2 => json!([-1]),
        3 => json!([1.5]),
        4 => json!(["a"]),
        5 => json!((0..rng.range(200, 3000))
            .map(|_| rng.below(VOCAB_GUESS))
            .collect::<Vec<_>>()),
        6 => json!([VOCAB_GUESS, VOCAB_GUESS + 1]),
        _ => json!((0..rng.range(1, 8))
            .map(|_| rng.below(VOCAB_GUESS))
            .collect::<Vec<_>>()),
    }
}

/// A completion prompt: text, token ids, lists of either, nested or mixed lists.
pub(super) fn prompt(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0..=5 => json!(text(rng)),
        6 | 7 => tokens(rng),
        8 => json!((0..rng.range(0, 4)).map(|_| text(rng)).collect::<Vec<_>>()),
        9 => json!((0..rng.range(0, 4))
            .map(|_| tokens(rng))
            .collect::<Vec<_>>()),
        10 => json!(["a", [1, 2]]),
        11 => json!([[[1]]]),
        12 => json!([[]]),
        _ => weird(rng),
    }
}

/// A chat conversation: every role, content as text, parts or other things, tool calls.
pub(super) fn messages(rng: &mut Rng) -> Value {
    if rng.chance(0.05) {
        return weird(rng);
    }
    let count = rng.range(0, 5);
    let mut list = Vec::new();
    for i in 0..count {
        let role = if rng.chance(0.8) {
            json!(if i % 2 == 0 { "user" } else { "assistant" })
        } else {
            json!(rng.pick(&[
                "system",
                "tool",
                "developer",
                "function",
                "robot",
                "",
                "USER"
            ]))
        };
        let mut message = Map::new();
        if rng.chance(0.97) {
            message.insert("role".to_string(), role);
        }
        let content = match rng.below(10) {
            0 => json!([{"type": "text", "text": text(rng)}, {"type": "text", "text": "more"}]),
            1 => json!([{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]),
            2 => json!([{"type": "text"}]),
            3 => Value::Null,
            4 => weird(rng),
            _ => json!(text(rng)),
        };
        if rng.chance(0.95) {
            message.insert("content".to_string(), content);
        }
        if rng.chance(0.1) {
            let arguments = if rng.chance(0.7) {
                json!("{\"city\": \"Paris\"}")
            } else {
                weird(rng)
            };
            message.insert(
                "tool_calls".to_string(),
                json!([{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": arguments}}]),
            );
        }
        if rng.chance(0.05) {
            message.insert("tool_call_id".to_string(), json!("call_1"));
        }
        if rng.chance(0.05) {
            message.insert("name".to_string(), weird(rng));
        }
        list.push(Value::Object(message));
    }
    Value::Array(list)
}

/// A `tools` list: well-formed, empty, or broken.
pub(super) fn tools(rng: &mut Rng) -> Value {
    let tool = |name: &str, parameters: Value| {
        json!({"type": "function", "function": {
            "name": name, "description": "a tool", "parameters": parameters}})
    };
    let weather = json!({"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]});
    match rng.below(10) {
        0 => json!([]),
        1 => json!([{}]),
        2 => json!([{"type": "function"}]),
        3 => json!([
            tool("get_weather", weather.clone()),
            tool("get_weather", json!({}))
        ]),
        4 => json!([tool("a b/c", json!({"type": "nope"}))]),
        5 => json!([tool("deep", schema(rng))]),
        6 => json!("x"),
        _ => json!([
            tool("get_weather", weather),
            tool("get_time", json!({"type": "object"}))
        ]),
    }
}

/// A `tool_choice`.
pub(super) fn tool_choice(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => json!("auto"),
        1 => json!("none"),
        2 | 3 => json!("required"),
        4 => json!({"type": "function", "function": {"name": "get_weather"}}),
        5 => json!({"type": "function", "function": {"name": "missing"}}),
        6 => json!({"type": "function"}),
        _ => json!("bogus"),
    }
}

/// `chat_template_kwargs`.
pub(super) fn template_kwargs(rng: &mut Rng) -> Value {
    match rng.below(7) {
        0 => json!({"enable_thinking": false}),
        1 => json!({"messages": []}),
        2 => json!({"add_generation_prompt": false, "tools": []}),
        3 => Value::Object(
            (0..rng.range(60, 80))
                .map(|i| (format!("k{i}"), json!(i)))
                .collect(),
        ),
        4 => json!({"bos_token": "<x>", "raise_exception": 1}),
        5 => json!({"x": nest_value(rng.range(10, 120) as usize)}),
        _ => json!("str"),
    }
}

/// `n` levels of `{"a": …}`.
pub(super) fn nest_value(n: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..n {
        v = json!({ "a": v });
    }
    v
}

/// A JSON schema: small, broken, self-referring, wide or deep.
pub(super) fn schema(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => json!({"type": "integer"}),
        1 => json!({"type": "string", "maxLength": 3}),
        2 => json!({"enum": [1, "a", null]}),
        3 => json!({"$ref": "#/$defs/missing"}),
        4 => json!({"$ref": "#"}),
        5 => json!({"type": "nope"}),
        6 => json!(true),
        7 => json!(false),
        8 => json!({"anyOf": (0..rng.range(2, 200))
            .map(|i| json!({"const": i}))
            .collect::<Vec<_>>()}),
        9 => {
            let mut v = json!({"type": "integer"});
            for _ in 0..rng.range(5, 80) {
                v = json!({"type": "object", "properties": {"a": v}, "required": ["a"]});
            }
            v
        }
        10 => json!({"type": "object", "properties": {"a": {"type": "integer"}},
                     "required": ["a", "b"], "additionalProperties": false}),
        _ => json!({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2}),
    }
}

/// A `response_format`.
pub(super) fn response_format(rng: &mut Rng) -> Value {
    match rng.below(9) {
        0 => json!({"type": "text"}),
        1 | 2 => json!({"type": "json_object"}),
        3..=5 => {
            json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema(rng)}})
        }
        6 => json!({"type": "json_schema"}),
        7 => json!({"type": "xml"}),
        _ => json!("json"),
    }
}

/// A `logit_bias` map.
pub(super) fn logit_bias(rng: &mut Rng) -> Value {
    match rng.below(9) {
        0 => json!({"5": -100}),
        1 => json!({"5": 100, "6": -100}),
        2 => Value::Object(
            (0..VOCAB_GUESS + 10)
                .map(|i| (i.to_string(), json!(-100)))
                .collect(),
        ),
        3 => json!({"abc": 1}),
        4 => json!({"-1": 1}),
        5 => json!({"4294967296": 1}),
        6 => json!({"5": 1e308}),
        7 => json!({"5": "x"}),
        _ => {
            let mut map = Map::new();
            map.insert("k".repeat(rng.range(100, 3000) as usize), json!(1));
            Value::Object(map)
        }
    }
}

/// A `sampler`: pipeline text of 1–5 stages, a long one, garbage, or stage objects.
pub(super) fn sampler(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0..=5 => {
            let stages: Vec<&str> = (0..rng.range(1, 5)).map(|_| *rng.pick(STAGES)).collect();
            json!(stages.join(" | "))
        }
        6 => json!(vec!["temp(1)"; rng.range(100, 2000) as usize].join(" | ")),
        7 => {
            let soup = [
                "(", ")", "|", "=", ",", "[", "]", "{", "}", "\"", "temp", "1", " ",
            ];
            json!((0..rng.range(1, 40))
                .map(|_| *rng.pick(&soup))
                .collect::<String>())
        }
        8 => json!([{"stage": "top_k", "k": 40}, {"stage": "temp", "t": 0.7}]),
        9 => json!(rng
            .pick(&[
                json!([{"stage": "grammar", "regex": "a+"}]),
                json!([{"stage": "dry", "breakers": ["\n"]}, {"stage": "greedy"}]),
                json!([{"stage": "temp", "t": "hot"}]),
                json!([{}]),
                json!([{"stage": 1}]),
                json!(["temp(1)"]),
                json!([[]]),
                json!([]),
                json!([null]),
                json!([{"stage": "grammar", "file": "/etc/passwd"}]),
            ])
            .clone()),
        10 => json!(""),
        _ => weird(rng),
    }
}

/// Byte-level mutations of a serialized body.
pub(super) fn mutate(rng: &mut Rng, body: &Value) -> Vec<u8> {
    let mut bytes = body.to_string().into_bytes();
    for _ in 0..rng.range(1, 3) {
        let len = bytes.len();
        match rng.below(12) {
            0 => bytes.truncate(rng.index(len + 1)),
            1 if len > 0 => {
                let at = rng.index(len);
                let n = rng.range(1, 16) as usize;
                bytes.drain(at..(at + n).min(len));
            }
            2 if len > 0 => {
                let at = rng.index(len);
                let end = (at + rng.range(1, 64) as usize).min(len);
                let copy = bytes[at..end].to_vec();
                let times = rng.range(1, 4) as usize;
                for _ in 0..times {
                    bytes.splice(at..at, copy.iter().copied());
                }
            }
            3 => {
                // Invalid UTF-8 (and NUL) inside or outside strings.
                let at = rng.index(len + 1);
                let bad = *rng.pick(&[
                    &b"\xff"[..],
                    b"\xc3",
                    b"\xed\xa0\x80",
                    b"\x00",
                    b"\xf4\x90\x80\x80",
                    b"\\ud800",
                    b"\\u0000",
                ]);
                bytes.splice(at..at, bad.iter().copied());
            }
            4 => {
                // A number replaced by what JSON has no number for.
                if let Some(at) = bytes.iter().position(|b| b.is_ascii_digit()) {
                    let end = bytes[at..]
                        .iter()
                        .position(|b| !(b.is_ascii_digit() || b".eE+-".contains(b)))
                        .map_or(bytes.len(), |e| at + e);
                    let with = *rng.pick(&[
                        "NaN",
                        "Infinity",
                        "-Infinity",
                        "1e999",
                        "-1e999",
                        "1e-999",
                        "0x10",
                        "01",
                        "1.",
                        ".5",
                        "+1",
                        "99999999999999999999999999",
                        "-0",
                    ]);
                    bytes.splice(at..end, with.bytes());
                }
            }
            5 => {
                // A key of the body given twice, the first with another value.
                if let Some(obj) = body.as_object() {
                    if let Some((key, _)) = obj.iter().nth(rng.index(obj.len().max(1))) {
                        let dup = format!("{}: {},", json!(key), weird(rng));
                        let at = len.min(1);
                        bytes.splice(at..at, dup.bytes());
                    }
                }
            }
            6 => {
                let wrap: &[(&str, &str)] = &[("[", "]"), ("\"", "\""), ("", "x"), ("{", "}")];
                let (a, b) = rng.pick(wrap);
                bytes.splice(0..0, a.bytes());
                bytes.extend_from_slice(b.as_bytes());
            }
            7 => {
                let bom = *rng.pick(&[&b"\xef\xbb\xbf"[..], b"\xff\xfe", b" \t\r\n"]);
                bytes.splice(0..0, bom.iter().copied());
            }
            8 if len > 0 => {
                let at = rng.index(len);
                bytes[at] ^= 1 << rng.below(8);
            }
            9 => {
                bytes = rng
                    .pick(&[&b""[..], b"null", b"0", b"[]", b"\"x\"", b"{}"])
                    .to_vec()
            }
            10 => {
                // Two bodies back to back.
                let again = bytes.clone();
                bytes.extend_from_slice(&again);
            }
            _ => {
                let at = rng.index(len + 1);
                let junk: Vec<u8> = (0..rng.range(1, 8)).map(|_| rng.next_u64() as u8).collect();
                bytes.splice(at..at, junk);
            }
        }
    }
    bytes
}

/// Deeply nested bodies: just under serde_json's recursion limit, past it, unbalanced.
pub(super) fn nested(rng: &mut Rng) -> Vec<u8> {
    let depth = *rng.pick(&[10usize, 100, 126, 127, 128, 129, 1000, 20_000]);
    let field = *rng.pick(&[
        "prompt",
        "messages",
        "sampler",
        "logit_bias",
        "chat_template_kwargs",
        "response_format",
        "tokens",
    ]);
    let (open, close) = *rng.pick(&[("[", "]"), ("{\"a\":", "}")]);
    let mut out = format!("{{\"max_tokens\": 1, \"{field}\": ");
    out += &open.repeat(depth);
    out += "1";
    if rng.chance(0.8) {
        out += &close.repeat(depth);
        out += "}";
    }
    out.into_bytes()
}
