//! `--model org/name` read from a Hugging Face cache laid out by the test as the Hub clients
//! write it (blobs, snapshot links, refs), with no network: `HF_HUB_OFFLINE=1` everywhere, and
//! no `HF_ENDPOINT` that could answer.

mod hub_support;

use hub_support::{fixture, lay_out_cache, repo_of, sieve_env, sieve_input, COMMIT};

const NEEDED: [&str; 4] = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "model.safetensors",
];

/// `generate --json`'s tokens for `model` (greedy, 4 tokens).
fn tokens(model: &str, env: &[(&str, &str)], cwd: Option<&std::path::Path>) -> serde_json::Value {
    let run = sieve_env(
        &[
            "generate",
            "--model",
            model,
            "--prompt",
            "Hello",
            "-n",
            "4",
            "--sampler",
            "greedy",
            "--json",
        ],
        env,
        cwd,
    );
    assert_eq!(run.code, 0, "{model}: {}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    v["tokens"].clone()
}

#[test]
fn a_cached_model_runs_by_its_name_offline() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo_of("llama-gqa-tied");
    lay_out_cache(root.path(), "test-org/tiny", &repo, &NEEDED);
    let expected = tokens(fixture("llama-gqa-tied").to_str().unwrap(), &[], None);
    let cache = root.path().to_str().unwrap();
    let offline = [("HF_HUB_CACHE", cache), ("HF_HUB_OFFLINE", "1")];
    assert_eq!(tokens("test-org/tiny", &offline, None), expected);
    let by_commit = format!("test-org/tiny@{COMMIT}");
    assert_eq!(tokens(&by_commit, &offline, None), expected);

    // HF_HOME/hub when HF_HUB_CACHE is not set.
    let home = tempfile::tempdir().unwrap();
    lay_out_cache(&home.path().join("hub"), "test-org/tiny", &repo, &NEEDED);
    let env = [
        ("HF_HOME", home.path().to_str().unwrap()),
        ("HF_HUB_OFFLINE", "1"),
    ];
    assert_eq!(tokens("test-org/tiny", &env, None), expected);

    // $XDG_CACHE_HOME/huggingface/hub when neither is set.
    let xdg = tempfile::tempdir().unwrap();
    let hub = xdg.path().join("huggingface").join("hub");
    lay_out_cache(&hub, "test-org/tiny", &repo, &NEEDED);
    let env = [
        ("XDG_CACHE_HOME", xdg.path().to_str().unwrap()),
        ("HF_HUB_OFFLINE", "1"),
    ];
    assert_eq!(tokens("test-org/tiny", &env, None), expected);
}

#[test]
fn a_local_directory_of_that_name_wins() {
    let root = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // The cache holds another model under the name; the directory must be taken.
    lay_out_cache(
        root.path(),
        "test-org/tiny",
        &repo_of("qwen2-bias"),
        &NEEDED,
    );
    let local = cwd.path().join("test-org").join("tiny");
    std::fs::create_dir_all(&local).unwrap();
    for file in NEEDED {
        std::fs::copy(fixture("llama-gqa-tied").join(file), local.join(file)).unwrap();
    }
    let env = [
        ("HF_HUB_CACHE", root.path().to_str().unwrap()),
        ("HF_HUB_OFFLINE", "1"),
    ];
    let expected = tokens(fixture("llama-gqa-tied").to_str().unwrap(), &[], None);
    assert_eq!(tokens("test-org/tiny", &env, Some(cwd.path())), expected);
    assert_ne!(tokens("test-org/tiny", &env, None), expected);
}

/// Runs `generate` on `test-org/tiny` offline in the cache at `root`, expecting exit code 2;
/// returns stderr.
fn offline_error(root: &std::path::Path) -> String {
    let run = sieve_env(
        &[
            "generate",
            "--model",
            "test-org/tiny",
            "--prompt",
            "Hi",
            "-n",
            "1",
        ],
        &[
            ("HF_HUB_CACHE", root.to_str().unwrap()),
            ("HF_HUB_OFFLINE", "1"),
        ],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let err = run.stderr;
    assert!(err.contains("--model test-org/tiny"), "{err}");
    assert!(
        err.contains(root.to_str().unwrap()),
        "names the cache: {err}"
    );
    assert!(err.contains("HF_HUB_OFFLINE"), "{err}");
    assert!(err.contains("hf download test-org/tiny"), "says how: {err}");
    err
}

#[test]
fn what_the_cache_lacks_is_said() {
    let root = tempfile::tempdir().unwrap();
    let err = offline_error(root.path());
    assert!(
        err.contains("models--test-org--tiny does not exist"),
        "{err}"
    );

    let repo = repo_of("llama-gqa-tied");
    let dir = lay_out_cache(root.path(), "test-org/tiny", &repo, &NEEDED);
    // A snapshot link whose blob is gone, as after a cleanup.
    let blob = dir.join("blobs").join(repo["tokenizer.json"].etag());
    std::fs::remove_file(blob).unwrap();
    let err = offline_error(root.path());
    assert!(err.contains("lacks tokenizer.json"), "{err}");

    // A missing weights file.
    std::fs::remove_file(dir.join("snapshots").join(COMMIT).join("model.safetensors")).unwrap();
    let err = offline_error(root.path());
    assert!(
        err.contains("lacks tokenizer.json, model.safetensors"),
        "{err}"
    );

    // A stale ref: main points to a commit whose snapshot is not there.
    let other = "fedcba9876543210fedcba9876543210fedcba98";
    std::fs::write(dir.join("refs").join("main"), other).unwrap();
    let err = offline_error(root.path());
    assert!(err.contains(&format!("commit {other}")), "{err}");
    assert!(err.contains("stale ref"), "{err}");
}

#[test]
fn sharded_snapshots_need_every_shard() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo_of("mistral-window-sharded");
    let shards: Vec<&str> = repo
        .keys()
        .map(String::as_str)
        .filter(|n| n.starts_with("model-0000"))
        .collect();
    assert_eq!(shards.len(), 4);
    let mut files = vec![
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "model.safetensors.index.json",
    ];
    files.extend(&shards[..3]);
    lay_out_cache(root.path(), "test-org/tiny", &repo, &files);
    let err = offline_error(root.path());
    assert!(
        err.contains("lacks model-00004-of-00004.safetensors"),
        "{err}"
    );
}

#[test]
fn paths_that_are_not_hub_names_fail_as_before() {
    let run = sieve_env(
        &["generate", "--model", "./no/such/model", "--prompt", "Hi"],
        &[("HF_HUB_OFFLINE", "1")],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains("Hugging Face cache"), "{}", run.stderr);
    assert!(run.stderr.contains("no/such/model"), "{}", run.stderr);
}

#[test]
fn chat_runs_a_cached_model_by_its_name() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo_of("qwen3-headdim");
    let mut files = NEEDED.to_vec();
    files.extend(["tokenizer_config.json", "chat_template.jinja"]);
    lay_out_cache(root.path(), "test-org/chat", &repo, &files);
    let env = [
        ("HF_HUB_CACHE", root.path().to_str().unwrap()),
        ("HF_HUB_OFFLINE", "1"),
    ];
    let chat = |model: &str, env: &[(&str, &str)]| {
        let args = ["chat", "--model", model, "--seed", "2", "-n", "6"];
        sieve_input(&args, env, None, "Hi\nAnd?\n")
    };
    let by_name = chat("test-org/chat", &env);
    assert_eq!(by_name.code, 0, "{}", by_name.stderr);
    let by_dir = chat(fixture("qwen3-headdim").to_str().unwrap(), &[]);
    assert_eq!(by_name.stdout, by_dir.stdout);
    assert_eq!(by_name.stdout.lines().count(), 2);
}
