#!/usr/bin/env python3
"""Write what transformers' beam search returns on the committed fixture models.

For every model directory under tests/fixtures/models (made by tools/make_fixtures.py, which
this script never rewrites), it loads the model in float32 (the weights widened exactly as
make_fixtures.py computed the expected logits; checked against logits.f32 first), then runs
`generate(num_beams=N, do_sample=False, length_penalty=α, early_stopping=…,
num_return_sequences=R, max_new_tokens=T, eos_token_id=E, repetition_penalty=r,
no_repeat_ngram_size=n)` for a grid of cases, and writes tests/fixtures/beams/<model>.json:
per case its parameters, the generated part of each returned sequence (cut after its EOS
token; transformers pads shorter ones) and `sequences_scores`.

The grid: three prompts cut from the fixture's own token sequence (5, 8 and 1 tokens); N in
{2, 3, 4}; every length penalty in {1, 0, 2, -0.5} with every early-stopping mode in
{True, False, "never"} for each prompt; R alternating 1 and N; T in {3, 7, 12}; EOS ids
that make beams finish (tokens of the prompt's greedy continuation: one id, or two) or the
model's own; a repetition penalty and/or n-gram ban in half the cases.

Usage (from the repository root):
    /work/venv/bin/python tools/make_beam_fixtures.py [--models tests/fixtures/models]
        [--out tests/fixtures/beams] [NAME ...]
"""

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

LENGTH_PENALTIES = [1.0, 0.0, 2.0, -0.5]
EARLY_STOPPING = [True, False, "never"]
MAX_NEW = [3, 7, 12]
# (repetition_penalty, no_repeat_ngram_size); None is off.
PROCESSORS = [(None, None), (1.3, None), (None, 2), (1.6, 3)]


def greedy(model, prompt, n):
    """The first n greedy tokens after prompt (no EOS), by full recomputation."""
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([ids])).logits[0, -1]
            ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):]


def check_logits(model, d):
    expected = json.loads((d / "expected.json").read_text())
    rows, vocab = expected["shape"]
    want = np.fromfile(d / "logits.f32", dtype="<f4").reshape(rows, vocab)
    with torch.no_grad():
        got = model(torch.tensor([expected["tokens"]])).logits[0].numpy()
    diff = float(np.abs(got - want).max())
    assert diff < 1e-5, f"{d.name}: the loaded model's logits differ by {diff}"
    return expected["tokens"]


def run_case(model, prompt, n, lp, es, r, t, eos, rep, ngram):
    kwargs = {}
    if rep is not None:
        kwargs["repetition_penalty"] = rep
    if ngram is not None:
        kwargs["no_repeat_ngram_size"] = ngram
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            num_beams=n,
            do_sample=False,
            length_penalty=lp,
            early_stopping=es,
            num_return_sequences=r,
            max_new_tokens=t,
            eos_token_id=eos,
            pad_token_id=eos[0],
            temperature=None,
            top_p=None,
            top_k=None,
            return_dict_in_generate=True,
            output_scores=True,
            **kwargs,
        )
    sequences = []
    for row in out.sequences.tolist():
        gen = row[len(prompt):]
        for i, tok in enumerate(gen):
            if tok in eos:
                gen = gen[: i + 1]
                break
        sequences.append(gen)
    return sequences, [float(s) for s in out.sequences_scores.tolist()]


def cases_for(model, tokens, own_eos):
    prompts = [tokens[:5], tokens[12:20], tokens[30:31]]
    i = 0
    for p, prompt in enumerate(prompts):
        cont = greedy(model, prompt, 6)
        eos_choices = [[cont[2]], [cont[1], cont[4]], own_eos]
        for lp_i, lp in enumerate(LENGTH_PENALTIES):
            for es_i, es in enumerate(EARLY_STOPPING):
                n = 2 + (lp_i + es_i + p) % 3
                r = 1 if i % 2 == 0 else n
                t = MAX_NEW[(i + p) % 3]
                eos = eos_choices[(i // 2) % 3]
                rep, ngram = PROCESSORS[(i + es_i) % 4]
                # Two greedy tokens may be the same id: keep it once.
                eos = sorted(set(eos), key=eos.index)
                yield {
                    "prompt": prompt,
                    "num_beams": n,
                    "length_penalty": lp,
                    "early_stopping": es,
                    "num_return_sequences": r,
                    "max_new_tokens": t,
                    "eos_token_id": eos,
                    "repetition_penalty": rep,
                    "no_repeat_ngram_size": ngram,
                }
                i += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tests/fixtures/models", type=Path)
    parser.add_argument("--out", default="tests/fixtures/beams", type=Path)
    parser.add_argument("names", nargs="*", help="fixtures to use (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.names or sorted(d.name for d in args.models.iterdir() if (d / "config.json").exists())
    for name in names:
        d = args.models / name
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
        tokens = check_logits(model, d)
        own = json.loads((d / "generation_config.json").read_text())["eos_token_id"]
        own = own if isinstance(own, list) else [own]
        cases = []
        finished_by_eos = 0
        for case in cases_for(model, tokens, own):
            seqs, scores = run_case(
                model,
                case["prompt"],
                case["num_beams"],
                case["length_penalty"],
                case["early_stopping"],
                case["num_return_sequences"],
                case["max_new_tokens"],
                case["eos_token_id"],
                case["repetition_penalty"],
                case["no_repeat_ngram_size"],
            )
            finished_by_eos += sum(1 for s in seqs if s and s[-1] in case["eos_token_id"])
            cases.append({**case, "sequences": seqs, "scores": scores})
        doc = {
            "model": name,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "cases": cases,
        }
        (args.out / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        total = sum(len(c["sequences"]) for c in cases)
        print(f"{name}: {len(cases)} cases, {total} sequences, {finished_by_eos} ending in EOS")


if __name__ == "__main__":
    main()
