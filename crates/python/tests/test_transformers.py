"""sieve.transformers.SieveLogitsProcessor in transformers' generate, on the repository's tiny
Llama fixture (vocabulary 300): select mode gives sieve's own picks for the logits generate
saw, distribution mode gives sieve's distribution and torch's draws follow it."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import sieve  # noqa: E402
from sieve.transformers import SieveLogitsProcessor  # noqa: E402

EOS = {2, 0}  # the fixture's generation_config.json
PROMPTS = [[1, 50, 60, 70], [1, 80, 90, 100]]


@pytest.fixture(scope="module")
def model(fixture_model):
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_pretrained(fixture_model, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def tokenizer(fixture_model):
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(fixture_model / "tokenizer.json"))


def generate(model, proc, prompts=PROMPTS, n=12, **kw):
    ids = torch.tensor(prompts)
    kw.setdefault("do_sample", False)
    return model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        logits_processor=[proc],
        max_new_tokens=n,
        output_logits=True,
        output_scores=True,
        return_dict_in_generate=True,
        pad_token_id=0,
        **kw,
    )


def replay(text, seed, prompt, logits, vocab=None):
    """What sieve picks when fed these logits step by step: the prompt accepted first, then
    every picked token, as `sieve generate` runs a pipeline."""
    p = sieve.Pipeline(text, seed, vocab)
    history = list(prompt)
    for t in prompt:
        p.accept(t)
    for row in logits:
        t = p.apply(row, history, prompt_len=len(prompt))
        p.accept(t)
        history.append(t)
        if t in EOS:
            break
    return history[len(prompt):]


def generated(out, r, prompt_len):
    tokens = out.sequences[r, prompt_len:].tolist()
    for i, t in enumerate(tokens):
        if t in EOS:
            return tokens[: i + 1]
    return tokens


@pytest.mark.parametrize(
    "text",
    [
        "penalty(1.3) | top_k(20) | temp(1.2) | dist",
        "min_p(0.02) | mirostat_v2(tau=4.0)",
        "xtc(0.05, 0.5) | top_p(0.95) | dist",
    ],
)
def test_select_mode_gives_sieves_own_picks_for_the_logits_generate_saw(model, tokenizer, text):
    proc = SieveLogitsProcessor(text, seed=11, tokenizer=tokenizer, eos_token_id=sorted(EOS))
    out = generate(model, proc)
    for r, prompt in enumerate(PROMPTS):
        logits = [step[r].numpy() for step in out.logits]
        want = replay(text, 11 + r, prompt, logits)
        assert generated(out, r, len(prompt)) == want
    # The processor returned one-hot rows.
    assert all(torch.isfinite(s).sum(dim=1).eq(1).all() for s in out.scores)


def test_select_mode_matches_sieve_apply_step_by_step(model, tokenizer, sieve_cli, tmp_path):
    # A pipeline without randomness: each step through `sieve apply --history` (a fresh
    # pipeline that accepts the history, then picks) must give generate's token.
    text = "penalty(1.5) | top_k(5) | greedy"
    out = generate(model, SieveLogitsProcessor(text, tokenizer=tokenizer, eos_token_id=sorted(EOS)), n=8)
    prompt = PROMPTS[0]
    tokens = generated(out, 0, len(prompt))
    history = list(prompt)
    for step, t in enumerate(tokens):
        path = tmp_path / f"step{step}.npy"
        np.save(path, out.logits[step][0].numpy())
        res = subprocess.run(
            [str(sieve_cli), "apply", "--sampler", text, "--logits", str(path), "--history",
             ",".join(map(str, history)), "--seed", "0", "--json"],
            capture_output=True, text=True, check=True,
        )
        assert json.loads(res.stdout)["selected"] == t, f"step {step}"
        history.append(t)


def test_each_generate_call_starts_fresh(model, tokenizer):
    proc = SieveLogitsProcessor("temp(1.5) | dist", seed=5, tokenizer=tokenizer, eos_token_id=sorted(EOS))
    first = generate(model, proc).sequences
    generate(model, proc, prompts=[[1, 7, 8]])  # another call in between
    again = generate(model, proc).sequences
    assert torch.equal(first, again)
    other = generate(model, SieveLogitsProcessor("temp(1.5) | dist", seed=6, eos_token_id=sorted(EOS))).sequences
    assert not torch.equal(first, other)


def test_distribution_mode_rows_are_sieves_distribution_and_follow_the_drawn_tokens(model, tokenizer):
    # penalty and DRY-like state depend on the tokens torch drew: replaying them must give
    # the same distribution at every step.
    text = "penalty(2.0) | top_k(20) | temp(0.8)"
    proc = SieveLogitsProcessor(text, seed=0, tokenizer=tokenizer, mode="distribution", eos_token_id=sorted(EOS))
    torch.manual_seed(1)
    out = generate(model, proc, do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
    for r, prompt in enumerate(PROMPTS):
        tokens = generated(out, r, len(prompt))
        p = sieve.Pipeline(text, r)
        history = list(prompt)
        for t in prompt:
            p.accept(t)
        for step, t in enumerate(tokens):
            ids, probs = p.probabilities(out.logits[step][r].numpy(), history, prompt_len=len(prompt))
            row = torch.softmax(out.scores[step][r].double(), dim=0).numpy()
            assert set(np.flatnonzero(row > 0).tolist()) == set(ids.tolist())
            np.testing.assert_allclose(row[ids], probs, rtol=1e-5, atol=1e-7)
            assert row[t] > 0, "torch drew a token sieve removed"
            p.accept(t)
            history.append(t)


# Upper 0.1% points of the chi-square distribution, by degrees of freedom.
CHI2_999 = [None, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59,
            31.26, 32.91, 34.53, 36.12, 37.70, 39.25]


def test_distribution_mode_draws_follow_sieves_own_draws(model):
    # 2 000 rows of one prompt, one step: torch draws from the processor's rows; sieve's own
    # selector draws with seeds 0..1999 from the same logits. A chi-square test of
    # homogeneity must not tell them apart.
    text = "top_k(6) | temp(1.5)"
    n = 2000
    proc = SieveLogitsProcessor(text, seed=0, mode="distribution")
    torch.manual_seed(2)
    out = generate(model, proc, prompts=[PROMPTS[0]] * n, n=1, do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
    torch_draws = out.sequences[:, -1].numpy()
    logits = out.logits[0][0].numpy()
    sieve_draws = np.array([sieve.Pipeline(text, s).apply(logits, PROMPTS[0]) for s in range(n)])
    cats = sorted(set(torch_draws.tolist()) | set(sieve_draws.tolist()))
    assert len(cats) <= 6
    a = np.array([(torch_draws == c).sum() for c in cats], dtype=float)
    b = np.array([(sieve_draws == c).sum() for c in cats], dtype=float)
    expected_a = (a + b) * a.sum() / (a.sum() + b.sum())
    expected_b = (a + b) * b.sum() / (a.sum() + b.sum())
    chi2 = (((a - expected_a) ** 2 / expected_a) + ((b - expected_b) ** 2 / expected_b)).sum()
    assert chi2 < CHI2_999[len(cats) - 1], (cats, a, b, chi2)
    # And a distribution sieve would not give (no temperature) is told apart.
    plain = np.array([sieve.Pipeline("top_k(6)", s).apply(logits, PROMPTS[0]) for s in range(n)])
    c = np.array([(plain == k).sum() for k in cats], dtype=float)
    e_a = (a + c) * 0.5
    assert (((a - e_a) ** 2 / e_a) + ((c - e_a) ** 2 / e_a)).sum() > CHI2_999[len(cats) - 1]


def test_a_bad_pipeline_or_mode_is_refused_before_generate():
    with pytest.raises(sieve.PipelineError) as info:
        SieveLogitsProcessor("top_k(40) | tmep(0.7)")
    assert info.value.column == 13
    with pytest.raises(ValueError, match="mode"):
        SieveLogitsProcessor("greedy", mode="sample")


def test_grammar_through_generate(model, tokenizer, grammar_plugin):
    sieve.load_plugin(grammar_plugin)
    proc = SieveLogitsProcessor('grammar(regex="[0-9]{2,4}") | dist', seed=1, tokenizer=tokenizer, eos_token_id=2)
    out = generate(model, proc, prompts=[PROMPTS[0]], n=10)
    tokens = out.sequences[0, 4:].tolist()
    assert 2 in tokens, tokens
    text = tokenizer.decode(tokens[: tokens.index(2)])
    assert text.strip().isdigit() and 2 <= len(text.strip()) <= 4, text


def test_left_padding_is_not_part_of_a_rows_history(model):
    pad = 3
    prompts = [[pad, pad, 1, 50, 60], [1, 80, 90, 100, 110]]
    ids = torch.tensor(prompts)
    mask = (ids != pad).long()
    text = "penalty(1.5) | top_k(10) | temp(1.2) | dist"
    proc = SieveLogitsProcessor(text, seed=2, pad_token_id=pad, eos_token_id=[])
    out = model.generate(ids, attention_mask=mask, logits_processor=[proc], do_sample=False,
                         max_new_tokens=6, output_logits=True, return_dict_in_generate=True,
                         pad_token_id=pad)
    for r, prompt in enumerate(prompts):
        real = [t for t in prompt if t != pad] if r == 0 else prompt
        generated = out.sequences[r, len(prompt):].tolist()
        # The last token is appended after the processor's last call.
        assert proc._batch[r].accepted == real + generated[:-1]
        p = sieve.Pipeline(text, 2 + r)
        for t in real:
            p.accept(t)
        history = list(real)
        for step, t in enumerate(generated):
            assert p.apply(out.logits[step][r].numpy(), history, prompt_len=len(real)) == t
            p.accept(t)
            history.append(t)
