"""sieve.vllm.SieveLogitsProcessor against a faithful fake of vLLM V1's batch protocol
(BatchUpdate: removed, then added (index, params, prompt ids, live output list), then moved
(unidirectional or swap); a persistent batch whose rows are condensed when requests finish).
The real vLLM runs in test_vllm.py when it is installed."""

from __future__ import annotations

import enum
import types
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sieve  # noqa: E402
from sieve import vllm as sv  # noqa: E402
from conftest import ROOT  # noqa: E402

VOCAB = 64


class _Move(enum.Enum):
    UNIDIRECTIONAL = 0
    SWAP = 1


# vLLM's own enum when it is installed.
Move = sv.MoveDirectionality or _Move


@dataclass
class FakeBatchUpdate:
    batch_size: int
    removed: List[int] = field(default_factory=list)
    added: List[Tuple[int, Any, Optional[List[int]], List[int]]] = field(default_factory=list)
    moved: List[Tuple[int, int, Move]] = field(default_factory=list)


def params(sampler=None, seed=None, **extra):
    args = dict(extra)
    if sampler is not None:
        args["sampler"] = sampler
    if seed is not None:
        args["seed"] = seed
    return types.SimpleNamespace(extra_args=args or None, seed=None)


def logits_for(rid, step):
    """A request's logits depend on the request and its step only, not on its row."""
    return np.random.default_rng(1000 * rid + step).standard_normal(VOCAB).astype(np.float32) * 2


@dataclass
class Req:
    rid: int
    params: Any
    prompt: List[int]
    n: int
    output: List[int] = field(default_factory=list)
    seen: List[np.ndarray] = field(default_factory=list)


class FakeEngine:
    """Admits requests into free rows, condenses the batch when requests finish (moves from
    the top), optionally swaps two rows, and samples greedily from what the processor
    returns, appending to each request's live output list."""

    def __init__(self, proc, swap_every=0):
        self.proc = proc
        self.rows: List[Optional[Req]] = []
        self.waiting: List[Req] = []
        self.done: List[Req] = []
        self.swap_every = swap_every
        self.steps = 0

    def run(self, max_rows):
        while self.waiting or any(self.rows):
            update = FakeBatchUpdate(batch_size=0)
            # finished requests leave
            for i, r in enumerate(self.rows):
                if r is not None and len(r.output) >= r.n:
                    update.removed.append(i)
                    self.done.append(r)
                    self.rows[i] = None
            # new requests fill holes in increasing index, then append
            for i in range(max_rows):
                if not self.waiting:
                    break
                if i >= len(self.rows):
                    self.rows.append(None)
                if self.rows[i] is None:
                    r = self.waiting.pop(0)
                    self.rows[i] = r
                    update.added.append((i, r.params, list(r.prompt), r.output))
                    update.removed = [j for j in update.removed if j != i]
            # condense: move the top rows down into remaining holes
            while None in self.rows:
                hole = self.rows.index(None)
                top = max(i for i, r in enumerate(self.rows) if r is not None) if any(self.rows) else -1
                if top < hole:
                    self.rows = self.rows[:hole]
                    break
                self.rows[hole], self.rows[top] = self.rows[top], None
                update.moved.append((top, hole, Move.UNIDIRECTIONAL))
            if self.swap_every and self.steps % self.swap_every == 1 and len(self.rows) >= 2:
                self.rows[0], self.rows[-1] = self.rows[-1], self.rows[0]
                update.moved.append((0, len(self.rows) - 1, Move.SWAP))
            update.batch_size = len(self.rows)
            changed = update.removed or update.added or update.moved
            self.proc.update_state(update if changed else None)
            if not self.rows:
                continue
            x = torch.from_numpy(np.stack([logits_for(r.rid, len(r.output)) for r in self.rows]))
            out = self.proc.apply(x)
            for i, r in enumerate(self.rows):
                r.seen.append(out[i].numpy().copy())
                r.output.append(int(torch.argmax(out[i])))
            self.steps += 1
        return sorted(self.done, key=lambda r: r.rid)


def make_requests(specs):
    return [Req(rid, params(*spec[:2]), [1, rid + 2, 3], spec[2]) for rid, spec in enumerate(specs)]


SPECS = [
    ("penalty(1.4) | top_k(12) | temp(1.3) | dist", 5, 9),
    (None, None, 6),  # no pipeline: untouched
    ("mirostat_v2(tau=3.0)", 11, 12),
    ("min_p(0.05) | xtc(0.1, 0.6) | dist", 3, 4),
    ("greedy", None, 7),
    ("temp(2.0) | dist", 8, 10),
    (None, None, 3),
]


def alone(spec, rid):
    [req] = make_requests([spec])
    req.rid = rid
    req.prompt = [1, rid + 2, 3]
    engine = FakeEngine(sv.SieveLogitsProcessor(None))
    engine.waiting = [req]
    return engine.run(max_rows=1)[0]


@pytest.mark.parametrize("max_rows, swap_every", [(3, 0), (4, 2), (7, 3)])
def test_each_request_equals_the_request_run_alone(max_rows, swap_every):
    proc = sv.SieveLogitsProcessor(None)
    engine = FakeEngine(proc, swap_every)
    engine.waiting = make_requests(SPECS)
    done = engine.run(max_rows)
    assert len(done) == len(SPECS)
    for r, spec in zip(done, SPECS):
        want = alone(spec, r.rid)
        assert r.output == want.output, f"request {r.rid}"
        if spec[0] is None:
            # passed through untouched: the logits as given
            for step, row in enumerate(r.seen):
                np.testing.assert_array_equal(row, logits_for(r.rid, step))
    assert not proc.requests.slots  # every finished request was dropped


def test_a_request_gets_the_tokens_sieve_picks():
    text, seed = "penalty(1.4) | top_k(12) | temp(1.3) | dist", 5
    r = alone((text, seed, 9), 0)
    p = sieve.Pipeline(text, seed)
    history = [1, 2, 3]
    for t in history:
        p.accept(t)
    for step, t in enumerate(r.output):
        assert p.apply(logits_for(0, step), history, prompt_len=3) == t
        p.accept(t)
        history.append(t)


def test_distribution_mode_rows_hold_the_distribution():
    proc = sv.SieveLogitsProcessor(None)
    engine = FakeEngine(proc)
    engine.waiting = [Req(0, params("top_k(5) | temp(0.7)", 1, sampler_mode="distribution"), [4], 3)]
    [r] = engine.run(1)
    p = sieve.Pipeline("top_k(5) | temp(0.7)", 1)
    p.accept(4)
    history = [4]
    for step, row in enumerate(r.seen):
        ids, probs = p.probabilities(logits_for(0, step), history, prompt_len=1)
        got = np.exp(row.astype(np.float64) - row.max())
        got /= got.sum()
        assert set(np.flatnonzero(got > 0)) == set(ids.tolist())
        np.testing.assert_allclose(got[ids], probs, rtol=1e-5)
        p.accept(r.output[step])
        history.append(r.output[step])


def test_validation_refuses_bad_pipelines_with_the_caret_diagnostic():
    sv.SieveLogitsProcessor.validate_params(params("top_k(40) | temp(0.7)"))
    sv.SieveLogitsProcessor.validate_params(params())
    sv.SieveLogitsProcessor.validate_params(types.SimpleNamespace(extra_args=None, seed=None))
    with pytest.raises(ValueError) as info:
        sv.SieveLogitsProcessor.validate_params(params("top_k(40) | tmep(0.7)"))
    assert "^^^^" in str(info.value) and "did you mean `temp`?" in str(info.value)
    for bad in [params(42), params("greedy", seed=-1), params("greedy", seed="x"), params("greedy", sampler_mode="beam")]:
        with pytest.raises(ValueError):
            sv.SieveLogitsProcessor.validate_params(bad)
    # Stages that need the model's vocabulary pass validation without one (the engine checks
    # them when it adds the request) ...
    sv.validate(params('logit_bias({"Hello": 2.0})'), None)
    # ... and are refused with one that lacks the token.
    vocab = sieve.Vocab([b"a", b"b"], [0])
    with pytest.raises(ValueError):
        sv.validate(params('logit_bias({"Hello": 2.0})'), vocab)


def test_argmax_is_not_claimed_and_no_request_means_no_work():
    proc = sv.SieveLogitsProcessor(None)
    assert proc.is_argmax_invariant() is False
    x = torch.randn(3, VOCAB)
    y = x.clone()
    proc.update_state(None)
    assert proc.apply(y) is y and torch.equal(x, y)


def test_non_cpu_float32_rows_go_through_a_copy():
    proc = sv.SieveLogitsProcessor(None)
    proc.update_state(FakeBatchUpdate(2, added=[(1, params("greedy"), [1], [])]))
    x = torch.from_numpy(np.stack([logits_for(0, 0), logits_for(1, 0)])).to(torch.float64)
    orig = x.clone()
    out = proc.apply(x)
    assert torch.equal(out[0], orig[0])
    assert torch.isfinite(out[1]).sum() == 1 and int(out[1].argmax()) == int(orig[1].argmax())


def test_a_pipeline_failing_while_running_ends_its_request_and_the_others_go_on():
    # Every token biased to -inf: the pipeline has no candidate left at its first step.
    dead = "logit_bias({" + ", ".join(f"{i}: -inf" for i in range(VOCAB)) + "}) | greedy"
    specs = [SPECS[0], (dead, 1, 5), SPECS[2]]
    proc = sv.SieveLogitsProcessor(None)
    proc.requests.eos = [7]
    engine = FakeEngine(proc)
    engine.waiting = make_requests(specs)
    done = engine.run(3)
    assert done[1].output[0] == 7  # ended with the end-of-sequence id
    # ... and passed through afterwards (the fake engine ignores EOS): plain greedy.
    for step, t in enumerate(done[1].output[1:], start=1):
        assert t == int(np.argmax(logits_for(1, step)))
    for r in (0, 2):
        assert done[r].output == alone(specs[r], r).output


def _config(name, vocab_size=320):
    model = types.SimpleNamespace(
        tokenizer=name, model=name, tokenizer_revision=None, revision=None,
        get_vocab_size=lambda: vocab_size,
    )
    return types.SimpleNamespace(model_config=model)


def test_the_vocabulary_of_a_hugging_face_name_comes_from_the_local_cache(tmp_path, monkeypatch):
    # vLLM given `org/name` downloads the model into the Hugging Face cache; the processor
    # finds the tokenizer there (no network) and gets the same vocabulary as from the
    # directory itself.
    hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    model_dir = ROOT / "tests" / "fixtures" / "models" / "qwen2-bias"
    repo = tmp_path / "models--org--tiny"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    for name in ("tokenizer.json", "config.json", "generation_config.json"):
        (snapshot / name).write_bytes((model_dir / name).read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub is not None

    assert sv.model_files_dir(_config("org/tiny").model_config) == str(snapshot)
    from_name = sv.engine_vocab(_config("org/tiny"))
    from_dir = sv.engine_vocab(_config(str(model_dir)))
    assert from_name is not None and from_dir is not None
    assert list(from_name.eos) == list(from_dir.eos) == [0]
    # A pipeline that names a token by its text builds with it, and not without one.
    text = 'logit_bias({"A": 2.0}) | greedy'
    sieve.Pipeline(text, 0, from_name)
    with pytest.raises(sieve.PipelineError):
        sieve.Pipeline(text, 0)
    # A name the cache does not hold gives no vocabulary (and no error).
    assert sv.model_files_dir(_config("org/absent").model_config) is None
    assert sv.engine_vocab(_config("org/absent")) is None
