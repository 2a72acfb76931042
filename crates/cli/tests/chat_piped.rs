//! `sieve chat` without a terminal: one message per line in, one reply per line out; each
//! reply equals `sieve generate --chat --messages` on the same conversation with the same
//! pipeline and seed (the later turns run on the KV cache kept from the earlier ones).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{fixture_model, ok_json};

/// What one piped chat printed and returned.
struct Chat {
    replies: Vec<String>,
    stderr: String,
    code: i32,
}

/// Runs `sieve chat args` with `input` on stdin.
fn chat(args: &[&str], input: &str) -> Chat {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .arg("chat")
        .args(args)
        .env_remove("SIEVE_PLUGIN_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    Chat {
        replies: stdout.lines().map(unescape).collect(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap(),
    }
}

/// A reply line back to its text (`\n`, `\r` and `\\` escapes).
fn unescape(line: &str) -> String {
    let mut text = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => text.push('\n'),
            Some('r') => text.push('\r'),
            Some(other) => text.push(other),
            None => panic!("a line ends in a lone backslash: {line:?}"),
        }
    }
    text
}

/// `generate --chat --messages` on `messages` with `args`: its text.
fn one_shot(model: &str, messages: &serde_json::Value, args: &[&str]) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), messages.to_string()).unwrap();
    let mut all = vec![
        "generate",
        "--model",
        model,
        "--messages",
        file.path().to_str().unwrap(),
        "--json",
    ];
    all.extend(args);
    ok_json(&all)["text"].as_str().unwrap().to_string()
}

#[test]
fn each_reply_equals_a_one_shot_generate_of_the_conversation() {
    for name in ["qwen3-headdim", "gemma3-window"] {
        let model = fixture_model(name);
        let args = ["--model", &model, "--seed", "7", "-n", "12"];
        let run = chat(&args, "Hi\nWhat is a prime?\nAnd 7?\n/stats\n");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.replies.len(), 3, "{:?}", run.replies);
        // The last turn ran on the cache the earlier ones left.
        let reused: usize = run
            .stderr
            .split_once("tokens (")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{}", run.stderr));
        assert!(reused > 10, "{}", run.stderr);
        let mut messages = Vec::new();
        for (user, reply) in ["Hi", "What is a prime?", "And 7?"]
            .iter()
            .zip(&run.replies)
        {
            messages.push(serde_json::json!({"role": "user", "content": user}));
            let expected = one_shot(&model, &serde_json::json!(messages), &args[2..]);
            assert_eq!(reply, &expected, "{name}, after {user:?}");
            messages.push(serde_json::json!({"role": "assistant", "content": reply}));
        }
    }
}

#[test]
fn commands_change_the_next_replies() {
    let model = fixture_model("qwen3-headdim");
    let saved = tempfile::tempdir().unwrap();
    let file = saved.path().join("chat.json");
    let input = format!(
        "/system Be brief.\n\
         /sampler top_k(3) | greedy\n\
         Hi\n\
         /sampler top_k(\n\
         /seed 11\n\
         /sampler temp(0.9)\n\
         Again\n\
         /undo\n\
         Once more\n\
         //slash\n\
         /stats\n\
         /save {}\n\
         /nope\n",
        file.display()
    );
    let run = chat(&["--model", &model, "--seed", "5", "-n", "6"], &input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.replies.len(), 4, "{:?}", run.replies);
    // A pipeline that does not compile is shown with its caret, and the chat goes on.
    assert!(run.stderr.contains("top_k("), "{}", run.stderr);
    assert!(run.stderr.contains('^'), "{}", run.stderr);
    assert!(!run.stderr.contains("error: error"), "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown command /nope"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("dropped the last exchange (2 messages)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("seed:           11"), "{}", run.stderr);

    let system = serde_json::json!({"role": "system", "content": "Be brief."});
    let user = |t: &str| serde_json::json!({"role": "user", "content": t});
    let assistant = |t: &str| serde_json::json!({"role": "assistant", "content": t});
    let greedy = ["--sampler", "top_k(3) | greedy", "-n", "6"];
    let hi = one_shot(&model, &serde_json::json!([system, user("Hi")]), &greedy);
    assert_eq!(run.replies[0], hi);
    let warm = ["--sampler", "temp(0.9)", "--seed", "11", "-n", "6"];
    let again = serde_json::json!([system, user("Hi"), assistant(&hi), user("Again")]);
    assert_eq!(run.replies[1], one_shot(&model, &again, &warm));
    // After /undo, "Again" and its reply are gone from the conversation.
    let more = serde_json::json!([system, user("Hi"), assistant(&hi), user("Once more")]);
    assert_eq!(run.replies[2], one_shot(&model, &more, &warm));

    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let roles: Vec<&str> = saved
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(saved[5]["content"], "/slash");
    assert_eq!(saved[6]["content"].as_str().unwrap(), run.replies[3]);
}

#[test]
fn a_loaded_conversation_is_continued() {
    let model = fixture_model("gemma2-softcap");
    let file = tempfile::NamedTempFile::new().unwrap();
    let messages = serde_json::json!({"messages": [
        {"role": "system", "content": "You count."},
        {"role": "user", "content": "One"},
        {"role": "assistant", "content": "Two"},
        {"role": "user", "content": "Three"},
    ]});
    std::fs::write(file.path(), messages.to_string()).unwrap();
    let path = file.path().to_str().unwrap();
    let args = ["--model", &model, "--seed", "3", "-n", "8", "--load", path];
    let run = chat(&args, "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expected = one_shot(&model, &messages, &["--seed", "3", "-n", "8"]);
    assert_eq!(run.replies, [expected]);
}

#[test]
fn a_conversation_past_the_context_is_an_error_line() {
    // qwen3-headdim's context is 128 tokens; 40-token replies outgrow it in a few turns.
    let model = fixture_model("qwen3-headdim");
    let input = "a\nb\nc\nd\ne\nf\n";
    let run = chat(&["--model", &model, "--seed", "1", "-n", "40"], input);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.replies.len(), 6, "one line per message");
    assert!(
        run.stderr
            .contains("longer than the model's context of 128"),
        "{}",
        run.stderr
    );
    assert_eq!(run.replies.last().unwrap(), "");
}

#[test]
fn usage_errors_exit_2_before_loading() {
    let run = chat(&["--model", &fixture_model("qwen2-bias")], "Hi\n");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no chat template"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("sieve chat needs a model with a chat template"),
        "{}",
        run.stderr
    );
    let run = chat(
        &[
            "--model",
            &fixture_model("qwen3-headdim"),
            "--sampler",
            "top_q(1)",
        ],
        "Hi\n",
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("top_q"), "{}", run.stderr);
    let missing = tempfile::tempdir().unwrap();
    let path = missing.path().join("none.json");
    let run = chat(
        &[
            "--model",
            &fixture_model("qwen3-headdim"),
            "--load",
            path.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--load"), "{}", run.stderr);
}

#[test]
fn trace_redraws_the_first_token_of_the_last_reply() {
    let model = fixture_model("gemma3-window");
    let run = chat(
        &["--model", &model, "--seed", "7", "-n", "3"],
        "Hi\n/trace\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), r#"[{"role": "user", "content": "Hi"}]"#).unwrap();
    let path = file.path().to_str().unwrap();
    let one = ok_json(&[
        "generate",
        "--model",
        &model,
        "--messages",
        path,
        "--seed",
        "7",
        "-n",
        "3",
        "--json",
    ]);
    let first = one["tokens"][0].as_u64().unwrap();
    let line = format!("first token of the last reply: {first} ");
    assert!(run.stderr.contains(&line), "{}", run.stderr);
    assert!(run.stderr.contains("stage 1: top_k"), "{}", run.stderr);
    assert!(run.stderr.contains("selected"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("the reply began with"),
        "{}",
        run.stderr
    );
}
