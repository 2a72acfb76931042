//! `sieve serve` with plugin stages: request fields that map to `dry` and `top_n_sigma`
//! give the text `sieve generate` gives for the canonical pipeline the response names, and
//! `response_format` constrains the output through the `grammar` plugin (and with `tools`,
//! tool calls written under a grammar come back as `tool_calls`).

mod server_support;

use serde_json::{json, Value};
use server_support::{fixture_model, generate, plugin, Server};

/// A server of `model` with the grammar plugin and `--tool-call-parser parser`.
fn grammar_server(model: &str, grammar: &str, parser: &str) -> Server {
    Server::start(&[
        "--model",
        model,
        "--plugin",
        grammar,
        "--tool-call-parser",
        parser,
    ])
}

#[test]
fn dry_and_top_n_sigma_fields_run_the_plugins() {
    let dry = plugin("sieve-plugin-dry");
    let sigma = plugin("sieve-plugin-top-n-sigma");
    let server = Server::start(&["--plugin", &dry, "--plugin", &sigma]);
    let body = json!({
        "prompt": "Once upon a time", "max_tokens": 24, "seed": 3, "temperature": 1.3,
        "dry_multiplier": 0.8, "dry_allowed_length": 3, "top_n_sigma": 1.5,
    });
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let sampler = v["sampler"].as_str().unwrap();
    assert!(
        sampler.starts_with("dry(multiplier=0.8, base=1.75, allowed_length=3, last_n=-1")
            && sampler.contains("| temp(t=1.3")
            && sampler.contains("| top_n_sigma(n=1.5) | dist(seed=-1)"),
        "{sampler}"
    );
    let want = generate(&[
        "--prompt",
        "Once upon a time",
        "-n",
        "24",
        "--seed",
        "3",
        "--plugin",
        &dry,
        "--plugin",
        &sigma,
        "--sampler",
        sampler,
    ]);
    assert_eq!(v["choices"][0]["text"], want.as_str());
}

/// The JSON answer to a request that ran under a JSON-schema grammar (checked).
fn constrained(server: &Server, path: &str, body: &Value) -> Value {
    let r = server.post(path, body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert!(
        v["sampler"]
            .as_str()
            .unwrap()
            .starts_with("grammar(json_schema="),
        "{v}"
    );
    v
}

/// The name and parsed arguments of the one tool call a chat answer holds (checked: the
/// answer finished with `tool_calls` and holds exactly one).
fn one_call(v: &Value) -> (String, Value) {
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{v}");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    let function = &calls[0]["function"];
    let args = serde_json::from_str(function["arguments"].as_str().unwrap()).unwrap();
    (function["name"].as_str().unwrap().to_string(), args)
}

#[test]
fn response_format_constrains_the_output() {
    let grammar = plugin("sieve-plugin-grammar");
    let model = fixture_model("qwen2-bias");
    let server = Server::start(&["--model", &model, "--plugin", &grammar]);
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}, "ok": {"type": "boolean"}},
        "required": ["n", "ok"], "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false},
    });
    for seed in 1..=3 {
        let body = json!({
            "prompt": "JSON:", "max_tokens": 40, "seed": seed,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
        });
        let v = constrained(&server, "/v1/completions", &body);
        let text = v["choices"][0]["text"].as_str().unwrap();
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("seed {seed}: {text:?} is not JSON: {e}"));
        assert!(value["n"].is_i64() && value["ok"].is_boolean(), "{text}");
    }
    let body = json!({"prompt": "JSON:", "max_tokens": 40, "seed": 1,
                      "response_format": {"type": "json_object"}});
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let text = v["choices"][0]["text"].as_str().unwrap();
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert!(value.is_object(), "{text}");
}

/// A DSL string literal of `text`.
fn dsl_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Every chunk of a stream (without `[DONE]`), and the concatenated content of choice 0.
fn chunks(events: &[String]) -> (Vec<Value>, String) {
    let chunks: Vec<Value> = events
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let content = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    (chunks, content)
}

#[test]
fn a_forced_tool_choice_constrains_the_answer_to_a_call() {
    let grammar = plugin("sieve-plugin-grammar");
    let model = fixture_model("qwen3-headdim");
    let tools = json!([
        {"type": "function", "function": {
            "name": "get_weather", "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}},
                           "required": ["city"], "additionalProperties": false}}},
        {"type": "function", "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
    ]);
    let messages = json!([{"role": "user", "content": "Weather in Paris?"}]);
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    // Whatever parser the server was started with, a forced call is JSON and comes back as
    // `tool_calls`.
    for parser in ["auto", "hermes", "none"] {
        let server = grammar_server(&model, &grammar, parser);
        for seed in 1..=3 {
            let body = json!({
                "messages": messages, "tools": tools, "tool_choice": named,
                "max_tokens": 150, "seed": seed,
            });
            let (name, args) = one_call(&constrained(&server, "/v1/chat/completions", &body));
            assert_eq!(name, "get_weather");
            assert!(
                args == json!({"city": "Paris"}) || args == json!({"city": "Oslo"}),
                "{args}"
            );

            // `required` without parallel calls: one call to either tool, with its arguments
            // (a list of calls may run on past `max_tokens` with a random model).
            let mut required = body.clone();
            required["tool_choice"] = json!("required");
            required["parallel_tool_calls"] = json!(false);
            let (name, args) = one_call(&constrained(&server, "/v1/chat/completions", &required));
            match name.as_str() {
                "get_weather" => assert!(args["city"].is_string(), "{args}"),
                "get_time" => assert_eq!(args, json!({})),
                other => panic!("a call to {other}"),
            }
        }
        // Streamed: no content, the call whole in one delta.
        let body = json!({
            "messages": messages, "tools": tools, "tool_choice": named,
            "max_tokens": 150, "seed": 1, "stream": true,
        });
        let (all, content) = chunks(&server.post("/v1/chat/completions", &body).events());
        assert_eq!(content, "", "{all:?}");
        let deltas: Vec<&Value> = all
            .iter()
            .filter(|c| !c["choices"][0]["delta"]["tool_calls"].is_null())
            .collect();
        assert_eq!(deltas.len(), 1, "{all:?}");
        assert_eq!(
            deltas[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
    }

    // Without the grammar plugin a forced call cannot be kept: a 400 naming `tool_choice`.
    let server = Server::start(&["--model", &model]);
    let body = json!({"messages": messages, "tools": tools, "tool_choice": "required"});
    let r = server.post("/v1/chat/completions", &body);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["param"], "tool_choice", "{}", r.body);
    assert!(r.body.contains("grammar"), "{}", r.body);
}

#[test]
fn tool_calls_in_the_answer_come_back_as_tool_calls() {
    let grammar = plugin("sieve-plugin-grammar");
    let model = fixture_model("qwen3-headdim");
    let tools = json!([{"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let messages = json!([{"role": "user", "content": "Weather in Paris?"}]);

    // The fixture's template does not mention <tool_call>: `auto` looks for JSON calls. The
    // grammar makes the (random) model write one.
    let server = Server::start(&["--model", &model, "--plugin", &grammar]);
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"const": "get_weather"},
            "arguments": {"type": "object", "properties": {"city": {"const": "Paris"}},
                          "required": ["city"], "additionalProperties": false}},
        "required": ["name", "arguments"], "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false},
    });
    let body = json!({
        "messages": messages, "tools": tools, "max_tokens": 120, "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "call", "schema": schema}},
    });
    let r = server.post("/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{v}");
    assert!(choice["message"]["content"].is_null(), "{v}");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert!(call["id"].as_str().unwrap().starts_with("call_"), "{call}");
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert_eq!(choice["message"]["tool_calls"].as_array().unwrap().len(), 1);

    // Streamed: nothing is sent as content, the call comes whole in one delta.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (all, content) = chunks(&server.post("/v1/chat/completions", &streamed).events());
    assert_eq!(content, "");
    let deltas: Vec<&Value> = all
        .iter()
        .filter(|c| !c["choices"][0]["delta"]["tool_calls"].is_null())
        .collect();
    assert_eq!(deltas.len(), 1, "{all:?}");
    let call = &deltas[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert_eq!(call["function"]["name"], "get_weather");
    let last = all.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");

    // `tool_choice: "none"`: the same answer is plain content.
    let mut none = body.clone();
    none["tool_choice"] = json!("none");
    let v = server.post("/v1/chat/completions", &none).json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "stop", "{v}");
    assert!(choice["message"].get("tool_calls").is_none(), "{v}");
    let text = choice["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"name": "get_weather", "arguments": {"city": "Paris"}})
    );

    // `tool_choice` that is neither a string nor a function object, or names no offered tool,
    // or forces a call with `response_format` or a `sampler` beside it: a 400 naming the field.
    for (choice, extra) in [
        (json!("always"), json!({})),
        (
            json!({"type": "function", "function": {"name": "get_time"}}),
            json!({}),
        ),
        (json!("required"), json!({"sampler": "greedy"})),
        (
            json!("required"),
            json!({"response_format": {"type": "json_object"}}),
        ),
    ] {
        let mut bad = body.clone();
        bad.as_object_mut().unwrap().remove("response_format");
        bad["tool_choice"] = choice;
        for (k, v) in extra.as_object().unwrap() {
            bad[k] = v.clone();
        }
        let r = server.post("/v1/chat/completions", &bad);
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.json()["error"]["param"], "tool_choice", "{}", r.body);
    }
    drop(server);

    // `--tool-call-parser hermes`: <tool_call> blocks, with the text before them as content
    // (streamed: sent before the tag, the call after).
    let server = grammar_server(&model, &grammar, "hermes");
    let answer = "Checking. <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
    let regex: String = answer
        .chars()
        .map(|c| match c {
            '{' | '}' | '.' => format!("\\{c}"),
            c => c.to_string(),
        })
        .collect();
    let body = json!({
        "messages": messages, "tools": tools, "max_tokens": 120,
        "sampler": format!("grammar(regex={}) | greedy", dsl_string(&regex)),
    });
    let v = server.post("/v1/chat/completions", &body).json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{v}");
    assert_eq!(choice["message"]["content"], "Checking.");
    let call = &choice["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["arguments"], "{\"city\":\"Oslo\"}");
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (all, content) = chunks(&server.post("/v1/chat/completions", &streamed).events());
    assert_eq!(content, "Checking.", "the same content as the whole answer");
    assert!(all
        .iter()
        .any(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_weather"));
    assert_eq!(
        all.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}
