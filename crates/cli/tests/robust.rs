//! Issue 8: nothing a user feeds `sieve` crashes it, hangs it or makes it grow without bound.
//! A table of corrupt model directories (each case: its message and exit code), stderr and
//! `--help` writes that fail, overflowing logits, and a closed stdout during `generate`.

mod common;

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fixture_model, sieve};

/// A copy of fixture `name` in a fresh temporary directory.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(fixture_model(name)).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    edit(&mut v);
    fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn set_config(field: &'static str, value: u64) -> impl Fn(&Path) {
    move |dir: &Path| edit_json(&dir.join("config.json"), |v| v[field] = value.into())
}

/// Runs `sieve generate` on `dir` with a kill-after deadline, so that a hang fails the test
/// instead of hanging it.
fn generate_guarded(dir: &Path) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args(["generate", "--model"])
        .arg(dir)
        .args(["--prompt", "hi", "-n", "2", "--seed", "1"])
        .env_remove("SIEVE_PLUGIN_PATH")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let err = stderr_of(&mut child);
            let code = status.code().expect("exited, not killed by a signal");
            return (code, err.replace(dir.to_str().unwrap(), "DIR"));
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("sieve generate hung on {}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

type Setup = Box<dyn Fn(&Path)>;

/// Each corrupt directory is refused with exit code 2 and a message naming the file (and the
/// field or tensor).
#[cfg(unix)]
#[test]
fn corrupt_model_directories_are_refused_with_a_message_naming_the_file() {
    use std::os::unix::fs::symlink;
    let st = "model.safetensors";
    let cases: Vec<(&str, &str, Setup, &str)> = vec![
        ("layers 2^60", "llama-gqa-tied", Box::new(set_config("num_hidden_layers", 1 << 60)),
         "error: --model DIR: DIR/config.json: `num_hidden_layers` (1152921504606846976) exceeds the number of tensors in the checkpoint (20)"),
        ("layers 2^40", "llama-gqa-tied", Box::new(set_config("num_hidden_layers", 1 << 40)),
         "error: --model DIR: DIR/config.json: `num_hidden_layers` (1099511627776) exceeds the number of tensors in the checkpoint (20)"),
        ("layers 10^9", "llama-gqa-tied", Box::new(set_config("num_hidden_layers", 1_000_000_000)),
         "error: --model DIR: DIR/config.json: `num_hidden_layers` (1000000000) exceeds the number of tensors in the checkpoint (20)"),
        ("layers 3 of 2", "llama-gqa-tied", Box::new(set_config("num_hidden_layers", 3)),
         "error: --model DIR: DIR/config.json: `num_hidden_layers` (3) exceeds the layers the checkpoint's tensors hold (0..=1)"),
        ("vocab 10^12", "llama-gqa-tied", Box::new(set_config("vocab_size", 1_000_000_000_000)),
         "error: --model DIR: DIR/config.json: `vocab_size` (1000000000000) exceeds the largest dimension of a tensor in the checkpoint (300, tensor `model.embed_tokens.weight` in DIR/model.safetensors)"),
        ("vocab 299", "llama-gqa-tied", Box::new(set_config("vocab_size", 299)),
         "error: --model DIR: DIR/config.json: `vocab_size` (299) does not match tensor `model.embed_tokens.weight` of shape [300, 64] in DIR/model.safetensors"),
        ("hidden 2^50", "llama-gqa-tied", Box::new(set_config("hidden_size", 1 << 50)),
         "error: --model DIR: DIR/config.json: `hidden_size` (1125899906842624) exceeds the largest dimension of a tensor in the checkpoint (300, tensor `model.embed_tokens.weight` in DIR/model.safetensors)"),
        ("intermediate 2^40", "llama-gqa-tied", Box::new(set_config("intermediate_size", 1 << 40)),
         "error: --model DIR: DIR/config.json: `intermediate_size` (1099511627776) exceeds the largest dimension of a tensor in the checkpoint (300, tensor `model.embed_tokens.weight` in DIR/model.safetensors)"),
        ("heads 2^40", "llama-gqa-tied", Box::new(set_config("num_attention_heads", 1 << 40)),
         "error: --model DIR: DIR/config.json: `num_attention_heads` times `head_dim` (16) (1099511627776) exceeds the largest dimension of a tensor in the checkpoint (300, tensor `model.embed_tokens.weight` in DIR/model.safetensors)"),
        ("head_dim 2^40", "llama-gqa-tied", Box::new(set_config("head_dim", 1 << 40)),
         "error: --model DIR: DIR/config.json: `head_dim` (1099511627776) exceeds the largest dimension of a tensor in the checkpoint (300, tensor `model.embed_tokens.weight` in DIR/model.safetensors)"),
        ("weights -> /dev/zero", "llama-gqa-tied", Box::new(move |d: &Path| {
            fs::remove_file(d.join(st)).unwrap();
            symlink("/dev/zero", d.join(st)).unwrap();
        }), "error: --model DIR: DIR/model.safetensors: not a regular file"),
        ("weights a FIFO", "llama-gqa-tied", Box::new(move |d: &Path| {
            fs::remove_file(d.join(st)).unwrap();
            let ok = Command::new("mkfifo").arg(d.join(st)).status().unwrap().success();
            assert!(ok, "mkfifo");
        }), "error: --model DIR: DIR/model.safetensors: not a regular file"),
        ("config.json -> /dev/zero", "llama-gqa-tied", Box::new(|d: &Path| {
            fs::remove_file(d.join("config.json")).unwrap();
            symlink("/dev/zero", d.join("config.json")).unwrap();
        }), "error: --model DIR: DIR/config.json: not a regular file"),
        ("index entry ../", "mistral-window-sharded", Box::new(|d: &Path| {
            edit_json(&d.join("model.safetensors.index.json"), |v| {
                v["weight_map"]["model.norm.weight"] = "../model-00001-of-00004.safetensors".into()
            })
        }), "error: --model DIR: DIR/model.safetensors.index.json: `../model-00001-of-00004.safetensors` is outside the model directory"),
        ("index entry /dev/zero", "mistral-window-sharded", Box::new(|d: &Path| {
            edit_json(&d.join("model.safetensors.index.json"), |v| {
                v["weight_map"]["model.norm.weight"] = "/dev/zero".into()
            })
        }), "error: --model DIR: DIR/model.safetensors.index.json: `/dev/zero` is outside the model directory"),
        ("shard -> /dev/zero", "mistral-window-sharded", Box::new(|d: &Path| {
            let shard = d.join("model-00002-of-00004.safetensors");
            fs::remove_file(&shard).unwrap();
            symlink("/dev/zero", &shard).unwrap();
        }), "error: --model DIR: DIR/model-00002-of-00004.safetensors: not a regular file"),
        ("truncated data", "llama-gqa-tied", Box::new(move |d: &Path| {
            let bytes = fs::read(d.join(st)).unwrap();
            fs::write(d.join(st), &bytes[..bytes.len() - 64]).unwrap();
        }), "error: --model DIR: DIR/model.safetensors: tensor `model.norm.weight`: data offsets"),
        ("dtype byte length", "llama-gqa-tied", Box::new(move |d: &Path| {
            rewrite_header(&d.join(st), |h| h["model.norm.weight"]["dtype"] = "F32".into())
        }), "error: --model DIR: DIR/model.safetensors: tensor `model.norm.weight`: shape [64] of F32 needs 256 bytes, the offsets give 128"),
        ("data length vs shape", "llama-gqa-tied", Box::new(move |d: &Path| {
            rewrite_header(&d.join(st), |h| h["model.norm.weight"]["shape"] = serde_json::json!([65]))
        }), "error: --model DIR: DIR/model.safetensors: tensor `model.norm.weight`: shape [65] of F16 needs 130 bytes, the offsets give 128"),
        ("scalar shape", "llama-gqa-tied", Box::new(move |d: &Path| {
            rewrite_header(&d.join(st), |h| h["model.norm.weight"]["shape"] = serde_json::json!([]))
        }), "error: --model DIR: DIR/model.safetensors: tensor `model.norm.weight`: shape [] of F16 needs 2 bytes, the offsets give 128"),
        ("tokenizer too small", "llama-gqa-tied", Box::new(|d: &Path| {
            set_config("vocab_size", 300)(d);
            edit_json(&d.join("tokenizer.json"), |v| {
                let vocab = v["model"]["vocab"].as_object_mut().unwrap();
                vocab.retain(|_, id| id.as_u64().unwrap() < 100);
                v["added_tokens"] = serde_json::json!([]);
                v["model"]["merges"] = serde_json::json!([]);
            })
        }), "error: --model DIR: DIR/tokenizer.json: the tokenizer has 100 tokens but the model emits ids up to 299 (`vocab_size` 300 in config.json); 200 ids without a token are more than the 128 that would be padding"),
    ];
    for (what, fixture, setup, expected) in cases {
        let tmp = copy_fixture(fixture);
        setup(tmp.path());
        let (code, stderr) = generate_guarded(tmp.path());
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            stderr.starts_with(expected),
            "{what}:\n  got  {stderr}\n  want {expected}"
        );
        assert_eq!(code, 2, "{what}: {stderr}");
    }
}

/// Rewrites the JSON header of a safetensors file, keeping its data.
fn rewrite_header(file: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let bytes = fs::read(file).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    edit(&mut header);
    let text = serde_json::to_vec(&header).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + n..]);
    fs::write(file, out).unwrap();
}

/// Runs sieve with stdout or stderr on `/dev/full`.
#[cfg(target_os = "linux")]
fn to_dev_full(args: &[&str], stream: &str) -> (i32, String) {
    let full = || {
        fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sieve"));
    cmd.args(args).env_remove("SIEVE_PLUGIN_PATH");
    let out = if stream == "stderr" {
        cmd.stderr(full()).stdout(Stdio::piped()).output().unwrap()
    } else {
        cmd.stdout(full()).stderr(Stdio::piped()).output().unwrap()
    };
    (
        out.status.code().expect("exited, not killed"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_stderr_or_stdout_is_exit_1_never_a_panic() {
    let model = fixture_model("llama-gqa-tied");
    let generate = [
        "generate", "--model", &model, "--prompt", "hi", "-n", "2", "--seed", "1", "--stats",
    ];
    for (args, stream) in [
        (&["check", "top_k(-1)"][..], "stderr"),
        (&generate[..], "stderr"),
        (&["--help"][..], "stdout"),
        (&["--version"][..], "stdout"),
        (&["generate", "--help"][..], "stdout"),
    ] {
        let (code, stderr) = to_dev_full(args, stream);
        assert_eq!(code, 1, "{args:?} with {stream} full: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A stage whose arithmetic overflows saturates at `f32::MAX` (documented in
/// `Candidates::scale_logits`): the largest logit is chosen, no stage is blamed falsely.
#[test]
fn overflowing_logits_saturate_and_the_largest_wins() {
    for pipeline in [
        "temp(0.5)|penalty(1.1)",
        "temp(0.5)|typical(0.9)",
        "logit_bias({0: 3e38})",
        "temp(0.5)|no_repeat_ngram(2)",
        "temp(0.5)|mirostat",
        "temp(0.5)|mirostat_v2",
    ] {
        let run = sieve(&[
            "apply",
            "--sampler",
            pipeline,
            "--logits",
            "3e38,1",
            "--history",
            "1",
            "--seed",
            "1",
            "--json",
        ]);
        assert_eq!(run.code, 0, "{pipeline}: {}", run.stderr);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["selected"], 0, "{pipeline}: {}", run.stdout);
        let logit = v["candidates"][0]["logit"]
            .as_f64()
            .expect("a finite logit");
        assert_eq!(logit as f32, f32::MAX, "{pipeline}");
    }
}

/// `sieve generate … | head -c 5`: generation stops at the closed pipe, the stats still
/// come, and the exit is quiet (0, as for every command whose reader stopped listening).
#[test]
fn a_closed_stdout_stops_generation_and_keeps_the_stats() {
    let model = fixture_model("llama-gqa-tied");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args([
            "generate", "--model", &model, "--prompt", "hi", "-n", "200", "--seed", "1",
        ])
        .args(["--sampler", "logit_bias({2: -inf}) | dist", "--stats"])
        .env_remove("SIEVE_PLUGIN_PATH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let status = wait_bounded(&mut child, "its stdout closed");
    let err = stderr_of(&mut child);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("finish reason cancelled"), "{err}");
}

/// Issue 8, item 10: a sampling failure during `generate` says its cause once (the engine's
/// error includes the stage's message and does not also report it as its source).
#[test]
fn a_sampling_failure_in_generate_says_its_cause_once() {
    // The fixture model has 300 tokens: ban them all.
    let model = fixture_model("llama-gqa-tied");
    let bans: Vec<String> = (0..300).map(|i| format!("{i}: -inf")).collect();
    let pipeline = format!("logit_bias({{{}}})", bans.join(", "));
    let run = sieve(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "Hi",
        "-n",
        "2",
        "--sampler",
        &pipeline,
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let cause = "stage `logit_bias` left no finite candidate";
    assert_eq!(run.stderr.matches(cause).count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("sampling: "), "{}", run.stderr);
}

/// Issue 8, item 4: `bench sampler --vocab` is bounded (2^27 logits) with a clear error and
/// exit 2, instead of aborting or growing without bound.
#[test]
fn bench_vocab_is_bounded() {
    for vocab in ["134217729", "1000000000000", "18446744073709551615"] {
        let run = sieve(&["bench", "sampler", "-s", "greedy", "--vocab", vocab]);
        assert_eq!(run.code, 2, "{vocab}: {}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!("invalid value '{vocab}' for '--vocab <N>'"))
                && run.stderr.contains("1..=134217728"),
            "{vocab}: {}",
            run.stderr
        );
    }
}

/// A `--logits` file larger than 2^27 values needs is refused before it is read (the files
/// here are sparse: nothing is written to disk), with exit 2.
#[test]
fn oversized_logits_files_are_refused_before_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("big.f32", (1u64 << 27) * 4 + 4, "more than the 536870912"),
        ("big.json", (32 << 20) + 1, "more than the 33554432"),
        (
            "big.npy",
            (1u64 << 27) * 8 + (64 << 10) + 1,
            "more than the 1073807360",
        ),
    ];
    for (name, size, message) in cases {
        let path = tmp.path().join(name);
        fs::File::create(&path).unwrap().set_len(size).unwrap();
        let path = path.to_str().unwrap();
        for command in [
            vec!["apply", "-s", "greedy", "--logits", path],
            vec!["bench", "sampler", "-s", "greedy", "--logits", path],
        ] {
            let run = sieve(&command);
            assert_eq!(run.code, 2, "{command:?}: {}", run.stderr);
            assert!(
                run.stderr
                    .contains(&format!("the file is {size} bytes, {message}")),
                "{command:?}: {}",
                run.stderr
            );
        }
    }
}

/// Everything `child` wrote to its (piped) stderr.
fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// Reads `pipe` to its end on a thread of its own, so a child writing more than a pipe holds
/// (64 KiB on Linux) is never blocked while the test waits for it to exit.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        pipe.read_to_string(&mut text).unwrap();
        text
    })
}

/// Sends SIGINT to `child` (with the system's `kill`, so the test needs no libc binding).
fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Waits (at most two minutes) until `child` catches SIGINT, so an interrupt cannot arrive
/// before its handler: one that did would be lost where the test runs with SIGINT ignored (a
/// shell's background job inherits that), or kill the child where it does not. Linux shows the
/// caught signals in `/proc/PID/status`; elsewhere this waits a fixed 1.5 s.
fn wait_for_interrupt_handler(child: &std::process::Child) {
    if !cfg!(target_os = "linux") {
        std::thread::sleep(Duration::from_millis(1500));
        return;
    }
    let status = format!("/proc/{}/status", child.id());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(&status).unwrap_or_default();
        let caught = text
            .lines()
            .find_map(|line| line.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        // Bit n - 1 stands for signal n; SIGINT is 2.
        if caught & 0b10 != 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "generate did not install its Ctrl-C handler within two minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits at most two minutes for `child`, killing it (and failing, saying it kept running
/// after `event`) past that.
fn wait_bounded(child: &mut std::process::Child, event: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("generate kept running after {event}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 8, item 11: Ctrl-C during `generate` keeps what was generated: the streamed text and
/// the stats with finish reason `cancelled`, or the `--json` report, then exit 130.
#[test]
#[cfg(unix)]
fn ctrl_c_ends_generate_with_what_it_made_and_exit_130() {
    // The embedded model with EOS banned writes until its context (1024 tokens) ends: far
    // longer than the moment the interrupt arrives.
    let base = [
        "generate",
        "--prompt",
        "Once upon a time",
        "-n",
        "1000",
        "--seed",
        "1",
        "--sampler",
        "logit_bias({2: -inf}) | dist",
        "--stats",
    ];
    // With --json nothing shows progress before the end, so that run decodes 64 sequences at
    // once (`--num-return`): many times the 1.5 s before the interrupt, on any machine this
    // test runs on (one sequence of the embedded model took 0.8 s in a debug build).
    let spawn = |json: bool| {
        Command::new(env!("CARGO_BIN_EXE_sieve"))
            .args(base)
            .args(if json {
                &["--json", "--num-return", "64"][..]
            } else {
                &[][..]
            })
            .env_remove("SIEVE_PLUGIN_PATH")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };

    // Streaming: once text arrives, the handler is in place; interrupt then.
    let mut child = spawn(false);
    let mut first = [0u8; 1];
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut first).unwrap();
    let (out, err) = (drain(stdout), drain(child.stderr.take().unwrap()));
    interrupt(&child);
    let status = wait_bounded(&mut child, "Ctrl-C");
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("finish reason cancelled"), "{err}");
    // The streamed text ends as a finished line (the first byte was read above).
    assert!(out.ends_with('\n'), "{out:?}");

    // JSON: the report comes at the end, with the finish reason and the stats.
    // The report of 64 sequences outgrows a pipe's buffer: read it while waiting.
    let mut child = spawn(true);
    let (out, _err) = (
        drain(child.stdout.take().unwrap()),
        drain(child.stderr.take().unwrap()),
    );
    wait_for_interrupt_handler(&child);
    // The handler is installed just before the prompt's prefill: let every sequence make tokens.
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let status = wait_bounded(&mut child, "Ctrl-C");
    let out = out.join().unwrap();
    assert_eq!(status.code(), Some(130), "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
    let sequences = report["sequences"].as_array().unwrap();
    assert_eq!(sequences.len(), 64, "{report}");
    let mut made = 0;
    for s in sequences {
        assert_eq!(s["finish_reason"], "cancelled", "{report}");
        let tokens = s["tokens"].as_array().unwrap().len();
        assert!(tokens > 0 && tokens < 1000, "{report}");
        made += tokens;
    }
    assert_eq!(report["stats"]["generated_tokens"], made, "{report}");
}
