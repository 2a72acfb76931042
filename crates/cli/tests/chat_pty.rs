//! `sieve chat` under a real pseudo-terminal: typing messages and commands, a pipeline that
//! does not compile (its caret), changing the pipeline mid-chat, stopping a reply with
//! Ctrl-C, Ctrl-C at the prompt, the history (Up arrow), Ctrl-D to quit.
//!
//! The model is the embedded story model with a one-line chat template beside it (the
//! template joins the messages, so the story continues); `SIEVE_CHAT_TOKEN_DELAY_MS` paces
//! the replies so that Ctrl-C surely lands while one is being written.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use expectrl::{ControlCode, Eof, Regex, Session};

/// The embedded target model with a chat template, in `dir`.
fn chat_model(dir: &Path) {
    let embedded: std::path::PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "models",
        "embedded",
        "target",
    ]
    .iter()
    .collect();
    for file in [
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "model.safetensors",
    ] {
        std::fs::copy(embedded.join(file), dir.join(file)).unwrap();
    }
    std::fs::write(
        dir.join("chat_template.jinja"),
        "{% for message in messages %}{{ message['content'] }} {% endfor %}",
    )
    .unwrap();
}

/// The text printed before `needle` (the terminal's line ends made `\n`).
fn until(chat: &mut Session, needle: &str) -> String {
    let found = chat
        .expect(needle)
        .unwrap_or_else(|e| panic!("waiting for {needle:?}: {e}"));
    String::from_utf8_lossy(found.before()).replace("\r\n", "\n")
}

#[test]
fn a_chat_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    chat_model(dir.path());
    let saved = dir.path().join("chat.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_sieve"));
    command
        .args([
            "chat",
            "--model",
            dir.path().to_str().unwrap(),
            "--seed",
            "4",
            "-n",
            "60",
        ])
        .env_remove("SIEVE_PLUGIN_PATH")
        .env("TERM", "xterm")
        .env("SIEVE_CHAT_TOKEN_DELAY_MS", "20");
    let mut chat = Session::spawn(command).unwrap();
    chat.set_expect_timeout(Some(Duration::from_secs(60)));
    until(&mut chat, "Ctrl-D quits.");
    until(&mut chat, ">>> ");

    // A typo in a pipeline: the caret diagnostic, and the chat goes on.
    chat.send_line("/sampler top_k(40) | temp(").unwrap();
    let screen = until(&mut chat, ">>> ");
    assert!(screen.contains('^'), "{screen}");
    assert!(screen.contains("temp("), "{screen}");

    chat.send_line("/sampler greedy").unwrap();
    assert!(until(&mut chat, ">>> ").contains("sampler: greedy"));

    chat.send_line("Once upon a time").unwrap();
    until(&mut chat, "Once upon a time");
    let reply = until(&mut chat, ">>> ");
    assert!(
        reply.chars().filter(|c| c.is_alphabetic()).count() > 5,
        "{reply:?}"
    );

    // Mid-chat, a pipeline that never ends a reply on its own; Ctrl-C ends this one.
    chat.send_line("/sampler logit_bias({2: -inf}) | top_k(20) | dist")
        .unwrap();
    assert!(until(&mut chat, ">>> ").contains("sampler: logit_bias"));
    chat.send_line("Then the dog").unwrap();
    until(&mut chat, "Then the dog");
    chat.expect(Regex("[a-z]{2}")).unwrap();
    chat.send(ControlCode::EndOfText).unwrap();
    until(
        &mut chat,
        "[stopped; what was written stays in the conversation]",
    );
    until(&mut chat, ">>> ");

    chat.send_line("/stats").unwrap();
    let stats = until(&mut chat, ">>> ");
    assert!(stats.contains("finish reason cancelled"), "{stats}");
    assert!(stats.contains("4 messages"), "{stats}");

    // Ctrl-C at the prompt clears the line; the Up arrow brings /stats back.
    chat.send("/und").unwrap();
    chat.send(ControlCode::EndOfText).unwrap();
    until(&mut chat, "(Ctrl-D or /quit leaves)");
    until(&mut chat, ">>> ");
    chat.send("\x1b[A").unwrap();
    until(&mut chat, "/stats");
    chat.send("\r").unwrap();
    until(&mut chat, "finish reason cancelled");
    until(&mut chat, ">>> ");

    chat.send_line(format!("/save {}", saved.display()))
        .unwrap();
    assert!(until(&mut chat, ">>> ").contains("saved 4 messages"));
    chat.send(ControlCode::EndOfTransmission).unwrap();
    chat.expect(Eof).unwrap();
    let status = chat.get_process().wait().unwrap();
    assert_eq!(
        format!("{status:?}").split(", ").last(),
        Some("0)"),
        "{status:?}"
    );

    // What the stopped reply had written stayed in the conversation.
    let messages: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let messages = messages.as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["content"], "Then the dog");
    assert_eq!(messages[3]["role"], "assistant");
    let partial = messages[3]["content"].as_str().unwrap();
    assert!(!partial.trim().is_empty(), "{messages:?}");
}
