//! `sieve serve` over real HTTP: the text `sieve generate` gives for the same seed (whole and
//! streamed, completions and chat, n choices), per-request pipelines, logprobs, the errors in
//! OpenAI's shape with their statuses, the queue bound, and a disconnected client freeing its
//! sequence.

mod server_support;

use serde_json::{json, Value};
use server_support::{fixture_model, generate, request, stream_some, Server};

const PROMPT: &str = "Once upon a time";

/// The text of every streamed chunk of one choice, concatenated.
fn streamed_text(events: &[String], field: &str) -> (String, Option<String>) {
    let mut text = String::new();
    let mut finish = None;
    for e in events.iter().filter(|e| *e != "[DONE]") {
        let v: Value = serde_json::from_str(e).unwrap();
        for c in v["choices"].as_array().unwrap() {
            let piece = match field {
                "text" => c["text"].as_str(),
                _ => c["delta"]["content"].as_str(),
            };
            text.push_str(piece.unwrap_or(""));
            if let Some(f) = c["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
    }
    (text, finish)
}

#[test]
fn completions_give_the_text_of_sieve_generate() {
    let server = Server::start(&["--model", "embedded"]);
    let plain = generate(&["--prompt", PROMPT, "-n", "24", "--seed", "7"]);
    let body = json!({"model": "embedded", "prompt": PROMPT, "max_tokens": 24, "seed": 7});
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["choices"][0]["text"], plain.as_str());
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["seed"], 7);
    assert_eq!(v["usage"]["completion_tokens"], 24);
    assert!(v["sampler"].as_str().unwrap().ends_with("dist(seed=-1)"));

    // The same, streamed, with a usage chunk.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let r = server.post("/v1/completions", &streamed);
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let events = r.events();
    assert_eq!(events.last().unwrap(), "[DONE]");
    let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 24);
    assert_eq!(usage["choices"], json!([]));
    assert!(events.len() > 10, "one chunk per token: {events:?}");
    assert_eq!(
        streamed_text(&events, "text"),
        (plain.clone(), Some("length".to_string()))
    );

    // A request's own pipeline, and n choices: choice i is generate with seed + i.
    let sampler = "penalty(1.3) | top_k(10) | temp(1.2)";
    let body = json!({"prompt": PROMPT, "max_tokens": 16, "seed": 40, "n": 3, "sampler": sampler});
    let v = server.post("/v1/completions", &body).json();
    for i in 0..3 {
        let seed = (40 + i).to_string();
        let want = generate(&[
            "--prompt", PROMPT, "-n", "16", "--seed", &seed, "-s", sampler,
        ]);
        assert_eq!(v["choices"][i]["text"], want.as_str(), "choice {i}");
        assert_eq!(v["choices"][i]["index"], i);
    }
    assert!(v["sampler"]
        .as_str()
        .unwrap()
        .starts_with("penalty(repeat=1.3"));

    // Fields map to stages; temperature 0 is greedy.
    let body = json!({"prompt": PROMPT, "max_tokens": 12, "temperature": 0, "stop": ["."]});
    let v = server.post("/v1/completions", &body).json();
    let want = generate(&[
        "--prompt", PROMPT, "-n", "12", "-s", "greedy", "--stop", ".",
    ]);
    assert_eq!(v["choices"][0]["text"], want.as_str());
    assert_eq!(v["sampler"], "greedy");

    // Token ids as the prompt.
    let ids = server.post("/tokenize", &json!({"prompt": PROMPT})).json();
    let body = json!({"prompt": ids["tokens"], "max_tokens": 24, "seed": 7});
    let v = server.post("/v1/completions", &body).json();
    assert_eq!(v["choices"][0]["text"], plain.as_str());
}

#[test]
fn chat_renders_the_template_as_generate_chat_does() {
    let model = fixture_model("qwen3-headdim");
    let server = Server::start(&["--model", &model, "--served-model-name", "tiny"]);
    let plain = generate(&[
        "--model",
        &model,
        "--chat",
        "--system",
        "Be brief.",
        "--prompt",
        "Hi",
        "-n",
        "10",
        "--seed",
        "5",
    ]);
    let body = json!({
        "model": "tiny",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]}
        ],
        "max_tokens": 10, "seed": 5,
    });
    let r = server.post("/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], plain.as_str());

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["logprobs"] = json!(true);
    streamed["top_logprobs"] = json!(3);
    let r = server.post("/v1/chat/completions", &streamed);
    let events = r.events();
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    let (text, _) = streamed_text(&events, "content");
    assert_eq!(text, plain);
    let with_logprobs: Vec<Value> = events[1..]
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .filter(|v| !v["choices"][0]["logprobs"].is_null())
        .collect();
    assert!(!with_logprobs.is_empty());
    for v in &with_logprobs {
        let entry = &v["choices"][0]["logprobs"]["content"][0];
        assert!(entry["logprob"].as_f64().unwrap() <= 0.0, "{entry}");
        let top = entry["top_logprobs"].as_array().unwrap();
        assert!(top.len() <= 3);
        let lps: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
        assert!(lps.windows(2).all(|w| w[0] >= w[1]), "{lps:?}");
    }
    // The embedded model has no chat template: a 400 naming `messages`.
    let embedded = Server::start(&[]);
    let r = embedded.post(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "Hi"}]}),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "messages");
}

#[test]
fn errors_have_openai_s_shape_and_status() {
    let server = Server::start(&["--model", "embedded", "--max-body", "10000"]);
    let check = |path: &str, body: Value, status: u16, param: Option<&str>| {
        let r = server.post(path, &body);
        assert_eq!(r.status, status, "{body}: {}", r.body);
        let v = r.json();
        let e = &v["error"];
        assert!(e["message"].is_string() && e["type"].is_string(), "{v}");
        assert_eq!(e["param"].as_str(), param, "{v}");
        v
    };
    let v = check(
        "/v1/completions",
        json!({"prompt": "x", "sampler": "top_k(40) | top_q(0.9)"}),
        400,
        Some("sampler"),
    );
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("^^^^^") && message.contains("top_p"),
        "{message}"
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "model": "gpt-4"}),
        404,
        Some("model"),
    );
    let v = check(
        "/v1/completions",
        json!({"prompt": vec![1; 1100], "max_tokens": 1}),
        400,
        Some("prompt"),
    );
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    check(
        "/v1/completions",
        json!({"prompt": "x", "temperature": "hot"}),
        400,
        Some("temperature"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "top_p": 2}),
        400,
        Some("top_p"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "n": 100}),
        400,
        Some("n"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "stop": [""]}),
        400,
        Some("stop"),
    );
    check(
        "/v1/completions",
        json!({"max_tokens": 3}),
        400,
        Some("prompt"),
    );
    check(
        "/v1/completions",
        json!({"prompt": [900000]}),
        400,
        Some("prompt"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "echo": true}),
        400,
        Some("echo"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "logprobs": 50}),
        400,
        Some("logprobs"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "dry_multiplier": 0.8}),
        400,
        Some("dry_multiplier"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "sampler": "grammar(file=\"/etc/passwd\")"}),
        400,
        Some("sampler"),
    );
    check(
        "/v1/completions",
        json!({"prompt": "x", "padding": "y".repeat(20000)}),
        413,
        None,
    );
    let r = request(
        server.addr,
        "POST",
        "/v1/completions",
        &[],
        Some(b"{not json"),
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not JSON"));
    let r = server.get("/v1/nothing");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].is_object());

    // With an API key, only /health and /metrics are open.
    let locked = Server::start(&["--api-key", "s3cret"]);
    let body = json!({"prompt": "x", "max_tokens": 2});
    let r = locked.post("/v1/completions", &body);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");
    let r = request(
        locked.addr,
        "POST",
        "/v1/completions",
        &[("Authorization", "Bearer wrong")],
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(r.status, 401);
    let r = request(
        locked.addr,
        "POST",
        "/v1/completions",
        &[("Authorization", "Bearer s3cret")],
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(locked.get("/health").status, 200);
    assert_eq!(locked.get("/v1/models").status, 401);
}

#[test]
fn models_tokenize_detokenize_health_and_metrics() {
    let server = Server::start(&[]);
    let v = server.get("/v1/models").json();
    assert_eq!(v["data"][0]["id"], "embedded");
    assert_eq!(v["data"][0]["max_model_len"], 1024);
    let t = server.post("/tokenize", &json!({"content": PROMPT})).json();
    let count = t["count"].as_u64().unwrap();
    assert_eq!(t["tokens"].as_array().unwrap().len() as u64, count);
    let d = server
        .post("/detokenize", &json!({"tokens": t["tokens"]}))
        .json();
    assert!(d["prompt"].as_str().unwrap().contains(PROMPT), "{d}");
    assert_eq!(server.get("/health").json()["status"], "ok");
    server.post(
        "/v1/completions",
        &json!({"prompt": PROMPT, "max_tokens": 5, "seed": 1}),
    );
    assert_eq!(
        server.metric("sieve_requests_total{endpoint=\"completions\"}"),
        1.0
    );
    assert_eq!(server.metric("sieve_generation_tokens_total"), 5.0);
    assert_eq!(server.metric("sieve_prompt_tokens_total"), count as f64);
    assert_eq!(
        server.metric("sieve_time_to_first_token_seconds_count"),
        1.0
    );
    assert_eq!(
        server.metric("sieve_time_per_output_token_seconds_count"),
        1.0
    );
    assert_eq!(server.metric("sieve_model_ready"), 1.0);
}

#[test]
fn a_disconnected_client_frees_its_sequence_and_the_queue_is_bounded() {
    let server = Server::start(&["--parallel", "1", "--max-queue", "1"]);
    let long = json!({"prompt": PROMPT, "max_tokens": 1000, "stream": true, "ignore_eos": true});
    let running = stream_some(server.addr, "/v1/completions", &long, 3);
    assert_eq!(server.metric("sieve_sequences_running"), 1.0);
    // The second waits (one slot), the third finds the queue full.
    let short = json!({"prompt": PROMPT, "max_tokens": 3, "seed": 2});
    let waiting = std::thread::spawn({
        let addr = server.addr;
        let short = short.to_string();
        move || request(addr, "POST", "/v1/completions", &[], Some(short.as_bytes()))
    });
    server.wait_until("a request waits", |s| {
        s.metric("sieve_requests_waiting") == 1.0
    });
    let r = server.post("/v1/completions", &long);
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.json()["error"]["code"], "queue_full");
    // Disconnecting the running stream frees its slot at once; the waiting one then runs.
    drop(running);
    let done = waiting.join().unwrap();
    assert_eq!(done.status, 200, "{}", done.body);
    let want = generate(&["--prompt", PROMPT, "-n", "3", "--seed", "2"]);
    assert_eq!(done.json()["choices"][0]["text"], want.as_str());
    assert_eq!(server.metric("sieve_requests_cancelled_total"), 1.0);
    server.wait_until("no sequence runs", |s| {
        s.metric("sieve_sequences_running") == 0.0 && s.metric("sieve_requests_waiting") == 0.0
    });
}

#[test]
fn prompts_read_in_chunks_beside_running_streams_give_the_same_text() {
    let server = Server::start(&["--prefill-chunk", "3"]);
    let long = "Once upon a time, there was a little girl named Lily. She loved to play \
                outside in the park with her friends. One day";
    // A stream runs while the long prompt is read three tokens per step.
    let body = json!({"prompt": PROMPT, "max_tokens": 30, "seed": 21, "stream": true});
    let running = std::thread::spawn({
        let addr = server.addr;
        move || {
            request(
                addr,
                "POST",
                "/v1/completions",
                &[],
                Some(body.to_string().as_bytes()),
            )
        }
    });
    let v = server
        .post(
            "/v1/completions",
            &json!({"prompt": long, "max_tokens": 20, "seed": 9}),
        )
        .json();
    let want = generate(&["--prompt", long, "-n", "20", "--seed", "9"]);
    assert_eq!(v["choices"][0]["text"], want.as_str());
    let events = running.join().unwrap().events();
    let want = generate(&["--prompt", PROMPT, "-n", "30", "--seed", "21"]);
    assert_eq!(streamed_text(&events, "text").0, want);
}

#[test]
fn special_tokens_are_skipped_unless_skip_special_tokens_is_false() {
    // Token 1 is `<s>` (special, not an EOS) in the fixture: forced, it writes nothing by
    // default and itself with `"skip_special_tokens": false`, as `generate` and
    // `generate --special` do.
    let model = fixture_model("llama-f32-linear");
    let server = Server::start(&["--model", &model]);
    let pipeline = "logit_bias({1: 100}) | greedy";
    let body = json!({"prompt": [5, 6], "max_tokens": 3, "sampler": pipeline});
    let cli = |extra: &[&str]| {
        let mut a = vec![
            "--model",
            &model,
            "--tokens",
            "5,6",
            "-n",
            "3",
            "--sampler",
            pipeline,
        ];
        a.extend_from_slice(extra);
        generate(&a)
    };
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["choices"][0]["text"], "");
    assert_eq!(cli(&[]), "");
    let mut shown = body.clone();
    shown["skip_special_tokens"] = json!(false);
    let r = server.post("/v1/completions", &shown);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["choices"][0]["text"], "<s><s><s>");
    assert_eq!(cli(&["--special"]), "<s><s><s>");
    shown["stream"] = json!(true);
    let r = server.post("/v1/completions", &shown);
    assert_eq!(streamed_text(&r.events(), "text").0, "<s><s><s>");
}

#[test]
fn several_prompts_in_one_completions_request_are_numbered_prompt_by_prompt() {
    let server = Server::start(&["--model", "embedded"]);
    let prompts = ["Once upon a time", "The cat"];
    let want: Vec<String> = prompts
        .iter()
        .flat_map(|p| {
            (0..2).map(move |j| {
                let seed = (3 + j).to_string();
                generate(&["--prompt", p, "-n", "10", "--seed", &seed])
            })
        })
        .collect();
    let body = json!({"prompt": prompts, "max_tokens": 10, "seed": 3, "n": 2});
    let r = server.post("/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 4);
    for (k, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], k);
        assert_eq!(c["text"], want[k].as_str(), "choice {k}");
    }
    assert_eq!(v["usage"]["completion_tokens"], 40);
    // Streamed: every choice's chunks carry its index; the texts are the same.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = server.post("/v1/completions", &streamed).events();
    let mut texts = vec![String::new(); 4];
    let mut finished = 0;
    for e in events.iter().filter(|e| *e != "[DONE]") {
        let v: Value = serde_json::from_str(e).unwrap();
        for c in v["choices"].as_array().unwrap() {
            let k = c["index"].as_u64().unwrap() as usize;
            texts[k].push_str(c["text"].as_str().unwrap_or(""));
            finished += usize::from(c["finish_reason"].is_string());
        }
    }
    assert_eq!(texts, want);
    assert_eq!(finished, 4);
    // Token-id lists too; a bad one names its place.
    let ids = json!({"prompt": [[5, 6], [7]], "max_tokens": 2});
    let r = server.post("/v1/completions", &ids);
    assert_eq!(
        r.json()["choices"].as_array().unwrap().len(),
        2,
        "{}",
        r.body
    );
    let r = server.post("/v1/completions", &json!({"prompt": [[5, 6], []]}));
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("prompt 1"),
        "{}",
        r.body
    );
}
