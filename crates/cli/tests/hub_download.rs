//! `--model org/name` downloaded from a Hub: a small HTTP server on 127.0.0.1 answers the
//! Hub's listing and file endpoints for a fixture model, reached through `HF_ENDPOINT`.

mod hub_support;

use std::path::Path;

use hub_support::{fixture, repo_of, sieve_env, Fault, Run, Server, COMMIT};

const REPO: &str = "test-org/tiny";

/// `generate` on `model` (greedy, 4 tokens, JSON) with `env`.
fn generate(model: &str, env: &[(&str, &str)]) -> Run {
    sieve_env(
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
        None,
    )
}

fn tokens(run: &Run) -> serde_json::Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    v["tokens"].clone()
}

fn env<'a>(cache: &'a Path, server: &'a Server) -> Vec<(&'a str, &'a str)> {
    vec![
        ("HF_HUB_CACHE", cache.to_str().unwrap()),
        ("HF_ENDPOINT", server.endpoint.as_str()),
    ]
}

fn snapshot(cache: &Path) -> std::path::PathBuf {
    cache
        .join("models--test-org--tiny")
        .join("snapshots")
        .join(COMMIT)
}

#[test]
fn exactly_the_needed_files_are_downloaded_into_the_cache_layout() {
    let cache = tempfile::tempdir().unwrap();
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), Fault::None);
    let run = generate(REPO, &env(cache.path(), &server));
    let expected = tokens(&generate(fixture("llama-gqa-tied").to_str().unwrap(), &[]));
    assert_eq!(tokens(&run), expected);
    assert!(
        run.stderr.contains("downloading it from http://127.0.0.1"),
        "{}",
        run.stderr
    );

    let mut fetched = server.transfers();
    fetched.sort();
    assert_eq!(
        fetched,
        [
            "config.json",
            "generation_config.json",
            "model.safetensors",
            "tokenizer.json"
        ]
    );
    let repo_dir = cache.path().join("models--test-org--tiny");
    assert_eq!(
        std::fs::read_to_string(repo_dir.join("refs/main")).unwrap(),
        COMMIT
    );
    for file in fetched {
        let link = snapshot(cache.path()).join(&file);
        let target = std::fs::read_link(&link).unwrap();
        assert!(
            target.starts_with("../../blobs"),
            "{file}: {}",
            target.display()
        );
    }

    // Cached now: the same name runs with the server's answers no longer needed.
    let before = server.requests().len();
    let offline = [
        ("HF_HUB_CACHE", cache.path().to_str().unwrap()),
        ("HF_HUB_OFFLINE", "1"),
    ];
    assert_eq!(tokens(&generate(REPO, &offline)), expected);
    assert_eq!(
        tokens(&generate(REPO, &env(cache.path(), &server))),
        expected
    );
    assert_eq!(
        server.requests().len(),
        before,
        "a cached model asks nothing"
    );
}

#[test]
fn sharded_weights_come_with_every_shard_of_the_index() {
    let cache = tempfile::tempdir().unwrap();
    let server = Server::start(REPO, repo_of("mistral-window-sharded"), Fault::None);
    let expected = tokens(&generate(
        fixture("mistral-window-sharded").to_str().unwrap(),
        &[],
    ));
    assert_eq!(
        tokens(&generate(REPO, &env(cache.path(), &server))),
        expected
    );
    let fetched = server.transfers();
    assert_eq!(
        fetched
            .iter()
            .filter(|f| f.starts_with("model-0000"))
            .count(),
        4
    );
    assert!(fetched.contains(&"model.safetensors.index.json".to_string()));
    assert!(!fetched
        .iter()
        .any(|f| f.ends_with(".f32") || f.ends_with(".md")));
}

#[test]
fn an_interrupted_transfer_resumes_where_it_stopped() {
    let cache = tempfile::tempdir().unwrap();
    // Every transfer of the weights breaks after 1000 bytes, more times than one run retries.
    let cut = Fault::Cut {
        file: "model.safetensors".into(),
        n: 1000,
        times: 100,
    };
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), cut);
    let run = generate(REPO, &env(cache.path(), &server));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("the download failed"), "{}", run.stderr);
    let blobs = cache.path().join("models--test-org--tiny").join("blobs");
    let part = std::fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "part"))
        .expect("the part file is kept");
    let kept = std::fs::metadata(&part).unwrap().len();
    assert!(kept >= 1000, "{kept} bytes kept");
    // Within the run, each retry asked for the rest only.
    let ranges: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/model.safetensors"))
        .filter_map(|r| r.range.clone())
        .collect();
    assert!(ranges.contains(&"bytes=1000-".to_string()), "{ranges:?}");

    // The network heals: the next run asks for what is missing, and the model runs.
    *server.fault.lock().unwrap() = Fault::None;
    let before = server.requests().len();
    let expected = tokens(&generate(fixture("llama-gqa-tied").to_str().unwrap(), &[]));
    assert_eq!(
        tokens(&generate(REPO, &env(cache.path(), &server))),
        expected
    );
    let resumed = server.requests()[before..]
        .iter()
        .filter(|r| r.path.ends_with("/model.safetensors"))
        .filter_map(|r| r.range.clone())
        .any(|r| r == format!("bytes={kept}-"));
    assert!(resumed, "the second run resumed at byte {kept}");
    assert!(!part.exists());
}

#[test]
fn a_file_with_the_wrong_hash_is_refused_and_deleted() {
    let cache = tempfile::tempdir().unwrap();
    let corrupt = Fault::Corrupt {
        file: "model.safetensors".into(),
    };
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), corrupt);
    let run = generate(REPO, &env(cache.path(), &server));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("refused the download"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("SHA-256"), "{}", run.stderr);
    assert!(!snapshot(cache.path()).join("model.safetensors").exists());
    let blobs = cache.path().join("models--test-org--tiny").join("blobs");
    let etag = repo_of("llama-gqa-tied")["model.safetensors"].etag();
    assert!(!blobs.join(etag).exists(), "the bad blob is deleted");

    *server.fault.lock().unwrap() = Fault::None;
    let expected = tokens(&generate(fixture("llama-gqa-tied").to_str().unwrap(), &[]));
    assert_eq!(
        tokens(&generate(REPO, &env(cache.path(), &server))),
        expected
    );
}

#[test]
fn offline_and_unreachable_and_unknown_are_clear_errors() {
    let cache = tempfile::tempdir().unwrap();
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), Fault::None);
    let mut offline = env(cache.path(), &server);
    offline.push(("HF_HUB_OFFLINE", "1"));
    let run = generate(REPO, &offline);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("HF_HUB_OFFLINE is set"),
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty(), "offline asks nothing");

    let run = generate("test-org/other", &env(cache.path(), &server));
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("has no model test-org/other"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("HTTP 404"), "{}", run.stderr);

    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let started = std::time::Instant::now();
    let run = generate(
        REPO,
        &[
            ("HF_HUB_CACHE", cache.path().to_str().unwrap()),
            ("HF_ENDPOINT", &endpoint),
        ],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(&format!("cannot reach {endpoint}")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hf download test-org/tiny"),
        "{}",
        run.stderr
    );
    assert!(started.elapsed().as_secs() < 30);
}

#[test]
fn the_token_is_sent() {
    let cache = tempfile::tempdir().unwrap();
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), Fault::None);
    let mut with_token = env(cache.path(), &server);
    with_token.push(("HF_TOKEN", "hf_secret"));
    tokens(&generate(REPO, &with_token));
    let requests = server.requests();
    assert!(!requests.is_empty());
    for r in requests {
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer hf_secret"),
            "{}",
            r.path
        );
    }
}

#[test]
fn a_gguf_name_downloads_that_one_file() {
    let cache = tempfile::tempdir().unwrap();
    let mut repo = repo_of("llama-gqa-tied");
    for name in ["tiny-Q8_0.gguf", "tiny-Q4_0.gguf"] {
        repo.insert(
            name.to_string(),
            hub_support::File {
                bytes: format!("GGUF {name}").into_bytes(),
                lfs: true,
            },
        );
    }
    let server = Server::start(REPO, repo, Fault::None);
    // Whether the file then opens is the GGUF reader's business; the download is checked.
    let _ = generate("test-org/tiny:tiny-Q8_0.gguf", &env(cache.path(), &server));
    assert_eq!(server.transfers(), ["tiny-Q8_0.gguf"]);
    let file = snapshot(cache.path()).join("tiny-Q8_0.gguf");
    assert_eq!(std::fs::read(file).unwrap(), b"GGUF tiny-Q8_0.gguf");

    let run = generate("test-org/tiny:nope.gguf", &env(cache.path(), &server));
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("has no file nope.gguf (its GGUF files: tiny-Q4_0.gguf, tiny-Q8_0.gguf)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_relative_cache_path_is_taken_from_the_working_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), Fault::None);
    let args = [
        "generate",
        "--model",
        REPO,
        "--prompt",
        "Hello",
        "-n",
        "4",
        "--sampler",
        "greedy",
        "--json",
    ];
    let env = [
        ("HF_HUB_CACHE", "hf-cache"),
        ("HF_ENDPOINT", server.endpoint.as_str()),
    ];
    let run = sieve_env(&args, &env, Some(cwd.path()));
    let expected = tokens(&generate(fixture("llama-gqa-tied").to_str().unwrap(), &[]));
    assert_eq!(tokens(&run), expected);
    let link = snapshot(&cwd.path().join("hf-cache")).join("model.safetensors");
    assert!(link.is_file(), "{}", link.display());
    let offline = [("HF_HUB_CACHE", "hf-cache"), ("HF_HUB_OFFLINE", "1")];
    assert_eq!(
        tokens(&sieve_env(&args, &offline, Some(cwd.path()))),
        expected
    );
}

#[test]
fn a_malformed_answer_is_an_error_not_a_crash() {
    let cache = tempfile::tempdir().unwrap();
    let fault = Fault::RedirectNowhere {
        file: "tokenizer.json".into(),
    };
    let server = Server::start(REPO, repo_of("llama-gqa-tied"), fault);
    let run = generate(REPO, &env(cache.path(), &server));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("downloading tokenizer.json"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("could not be used"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}
