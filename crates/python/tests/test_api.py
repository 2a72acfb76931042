"""The package API: check, samplers, Pipeline, errors, and agreement with `sieve apply`."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import sieve

PIPELINES = [
    "greedy",
    "temp(0.8)",
    "penalty(1.5) | top_k(10) | temp(1.3) | dist",
    "top_p(0.8) | min_p(0.05)",
    "mirostat_v2(tau=3.0)",
    "xtc(threshold=0.05, probability=0.7) | typical(0.9)",
]


def logits(n=64, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32) * 2


def cli_apply(cli, text, x, history, seed, tmp_path, extra=()):
    path = tmp_path / "logits.json"
    path.write_text(json.dumps([float(v) for v in x]))
    cmd = [str(cli), "apply", "--sampler", text, "--logits", str(path), "--seed", str(seed), "--json"]
    if len(history):
        cmd += ["--history", ",".join(map(str, history))]
    out = subprocess.run(cmd + list(extra), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("text", PIPELINES)
@pytest.mark.parametrize("seed", [0, 7, 123456789])
def test_apply_picks_what_the_cli_picks(sieve_cli, tmp_path, text, seed):
    x = logits(seed=seed % 97)
    history = [3, 9, 9, 41]
    want = cli_apply(sieve_cli, text, x, history, seed, tmp_path)
    p = sieve.Pipeline(text, seed=seed)
    for t in history:
        p.accept(t)
    assert p.apply(x, history) == want["selected"]
    # A fresh copy: random stages (xtc) draw again on every call.
    q = sieve.Pipeline(text, seed=seed)
    for t in history:
        q.accept(t)
    ids, probs = q.probabilities(x, history)
    # The CLI lists the survivors after the selector; for `dist` pipelines those are the
    # survivors of the stages before it, the distribution `probabilities` gives.
    if p.selector == "dist":
        got = dict(zip(ids.tolist(), probs.tolist()))
        cli = {c["id"]: c["p"] for c in want["candidates"]}
        assert set(got) == set(cli)
        for k, v in cli.items():
            assert got[k] == pytest.approx(v, rel=1e-5, abs=1e-7)


def test_a_torch_tensor_and_a_list_give_what_numpy_gives():
    torch = pytest.importorskip("torch")
    x = logits()
    a = sieve.Pipeline("top_k(8) | dist", seed=3).apply(x)
    b = sieve.Pipeline("top_k(8) | dist", seed=3).apply(torch.from_numpy(x.copy()))
    c = sieve.Pipeline("top_k(8) | dist", seed=3).apply(x.tolist())
    d = sieve.Pipeline("top_k(8) | dist", seed=3).apply(x.astype(np.float64))
    assert a == b == c == d


def test_a_decoding_loop_is_repeatable_and_seeds_differ():
    def run(seed):
        p = sieve.Pipeline("penalty(1.2) | temp(1.5) | dist", seed=seed)
        history = [1, 2]
        for t in history:
            p.accept(t)
        for step in range(30):
            t = p.apply(logits(seed=step), history, prompt_len=2)
            p.accept(t)
            history.append(t)
        return history[2:]

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_reset_replays_the_seed_and_fork_carries_the_state():
    x = logits()
    p = sieve.Pipeline("temp(2.0) | dist", seed=11)
    first = [p.apply(x) for _ in range(10)]
    p.reset()
    assert [p.apply(x) for _ in range(10)] == first
    q = sieve.Pipeline("penalty(5.0) | greedy")
    best = q.apply(x)
    q.accept(best)
    r = q.fork(99)
    assert r.accepted == [best]
    assert r.apply(x, [best]) == q.apply(x, [best]) != best
    q.reset()
    assert q.accepted == []


def test_check_gives_the_canonical_form_and_the_caret_diagnostic(sieve_cli):
    assert sieve.check("top_k(40)") == "top_k(k=40) | dist(seed=-1)"
    cli = subprocess.run([str(sieve_cli), "check", "top_p(0.9) | temp(0.7)"], capture_output=True, text=True)
    assert sieve.check("top_p(0.9) | temp(0.7)") == cli.stdout.strip()
    with pytest.raises(sieve.PipelineError) as info:
        sieve.check("temp(0.7) | top_q(0.9)")
    e = info.value
    assert (e.line, e.column) == (1, 13)
    assert "unknown stage `top_q`" in e.message
    assert "^^^^^" in str(e) and "did you mean `top_k` or `top_p`?" in str(e)
    assert isinstance(e, ValueError) and isinstance(e, sieve.SieveError)
    cli = subprocess.run([str(sieve_cli), "check", "temp(0.7) | top_q(0.9)"], capture_output=True, text=True)
    assert cli.returncode == 2 and str(e).strip() in cli.stderr
    with pytest.raises(sieve.PipelineError) as info:
        sieve.Pipeline("top_k(k=-1)")
    assert (info.value.line, info.value.column) == (1, 9)  # the value


def test_samplers_lists_every_stage_with_its_schema():
    stages = {s["name"]: s for s in sieve.samplers()}
    assert {"greedy", "dist", "top_k", "top_p", "min_p", "temp", "penalty", "xtc"} <= set(stages)
    top_k = stages["top_k"]
    assert top_k["selector"] is False and top_k["plugin"] is None
    assert top_k["params"][0]["name"] == "k"
    assert stages["greedy"]["selector"] is True
    assert [s["name"] for s in sieve.samplers()] == sorted(stages)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda p: p.apply([1.0, float("nan")]), ValueError, "logit 1 is NaN"),
        (lambda p: p.apply([1.0, float("inf")]), ValueError, "logit 1 is inf"),
        (lambda p: p.apply([1.0, 2.0], [5]), ValueError, "history token 0 is 5"),
        (lambda p: p.apply([1.0, 2.0], [-1]), ValueError, "negative"),
        (lambda p: p.apply([1.0, 2.0], [0], prompt_len=3), ValueError, "prompt_len 3"),
        (lambda p: p.apply([]), ValueError, "empty"),
        (lambda p: p.apply(np.zeros((2, 2), np.float32)), ValueError, "1-D"),
        (lambda p: p.apply(["a", "b"]), TypeError, "numbers"),
        (lambda p: p.apply([1.0], [0.5]), TypeError, "integer"),
        (lambda p: p.accept(-3), ValueError, "token"),
        (lambda p: p.accept("x"), TypeError, "int"),
        (lambda p: p.fork(-1), ValueError, "seed"),
        (lambda p: p.apply([-np.inf, -np.inf]), sieve.SamplingError, "no finite candidate"),
    ],
)
def test_bad_arguments_raise_python_exceptions(call, error, words):
    with pytest.raises(error, match=words):
        call(sieve.Pipeline("greedy"))


def test_bad_constructor_arguments():
    with pytest.raises(TypeError):
        sieve.Pipeline(42)
    with pytest.raises(ValueError, match="seed"):
        sieve.Pipeline("greedy", seed=2**64)
    with pytest.raises(ValueError, match="eos id 5"):
        sieve.Vocab([b"a", b"b"], [5])
    with pytest.raises(TypeError, match="tokenizer"):
        sieve.Pipeline("greedy", vocab=object())


def test_vocab_from_bytes_lets_logit_bias_name_tokens_by_text():
    vocab = sieve.Vocab([b"a", b"b", b"Hello", b" world"], [0])
    assert len(vocab) == 4 and vocab.eos == [0] and vocab.find(b"Hello") == 2
    x = np.zeros(4, dtype=np.float32)
    assert sieve.Pipeline('logit_bias({"Hello": 5.0}) | greedy', vocab=vocab).apply(x) == 2
    assert sieve.Pipeline('logit_bias({" world": 5.0}) | greedy', vocab=([b"a", b"b", b"Hello", b" world"], [0])).apply(x) == 3
    with pytest.raises(sieve.PipelineError):
        sieve.Pipeline('logit_bias({"Hello": 5.0}) | greedy')


def test_vocab_from_a_tokenizer_json_reads_token_bytes(fixture_model):
    vocab = sieve.vocab_from_tokenizer(fixture_model / "tokenizer.json", eos=2)
    assert len(vocab) > 0 and vocab.eos == [2]
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(fixture_model / "tokenizer.json"))
    ids = tok.encode("hello world").ids
    text = b"".join(vocab.token_bytes(i) for i in ids)
    assert text.strip() == b"hello world" or tok.decode(ids).encode() in text


def test_dry_plugin_through_python(dry_plugin, sieve_cli, tmp_path):
    info = sieve.load_plugin(dry_plugin)
    assert info["stages"] == ["dry"] and info["name"] == "dry"
    assert sieve.load_plugin(dry_plugin) == info  # loaded once
    assert any(s["name"] == "dry" and s["plugin"]["name"] == "dry" for s in sieve.samplers())
    text = "dry(multiplier=2.0, breakers=[]) | greedy"
    x = logits(16, seed=3)
    history = [1, 2, 3, 1, 2, 3, 1, 2]
    p = sieve.Pipeline(text)
    for t in history:
        p.accept(t)
    want = cli_apply(sieve_cli, text, x, history, 0, tmp_path, ["--plugin", str(dry_plugin)])
    assert p.apply(x, history) == want["selected"]


def test_a_bad_plugin_is_refused(tmp_path):
    path = tmp_path / "libnot_a_plugin.so"
    path.write_bytes(b"not a library")
    with pytest.raises(sieve.PluginError, match="not a loadable library"):
        sieve.load_plugin(path)
    with pytest.raises(sieve.PluginError, match="No such file|no such file|not found"):
        sieve.load_plugin(tmp_path / "missing.so")


def test_grammar_plugin_keeps_the_output_in_the_regex(grammar_plugin, fixture_model):
    sieve.load_plugin(grammar_plugin)
    vocab = sieve.vocab_from_tokenizer(fixture_model / "tokenizer.json", eos=2, size=300)
    p = sieve.Pipeline('grammar(regex="[0-9]{3}") | temp(1.5) | dist', seed=4, vocab=vocab)
    history = [1]
    p.accept(1)
    out = b""
    for step in range(12):
        t = p.apply(logits(300, seed=step), history, prompt_len=1)
        p.accept(t)
        history.append(t)
        if t == 2:
            break
        out += vocab.token_bytes(t)
    assert history[-1] == 2, history
    assert len(out) == 3 and out.isdigit(), out
    with pytest.raises(sieve.PipelineError, match="vocabulary"):
        sieve.Pipeline('grammar(regex="[0-9]+")')
