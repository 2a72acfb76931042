#!/usr/bin/env python3
"""Write what transformers computes with each fixture model in bfloat16, for `--dtype bf16`.

For every fixture directory under tests/fixtures/models this loads the checkpoint with
`torch_dtype=torch.bfloat16` (weights rounded to bf16 with round-to-nearest-even, and every
activation computed in bf16, as a user of transformers running a model in bf16 gets), runs the
fixture's token sequence (expected.json's `tokens`) in eval mode, and writes:

- logits.bf16.f32: those logits widened to float32, raw little-endian, row-major
  [positions, vocab];
- bf16.json: the torch and transformers versions used.

sieve with `--dtype bf16` keeps the weights in bf16 but computes in f32, so its logits are
closer to the f32 logits than transformers' bf16 ones are; crates/backends/tests/dtype.rs
states the tolerance between the two.

Usage (from the repository root; run by hand, the outputs are committed):
    /work/venv/bin/python tools/make_bf16_logits.py [--fixtures tests/fixtures/models]
"""

import argparse
import json
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", default="tests/fixtures/models")
    args = parser.parse_args()
    for directory in sorted(Path(args.fixtures).iterdir()):
        expected = directory / "expected.json"
        if not expected.is_file():
            continue
        tokens = json.loads(expected.read_text())["tokens"]
        model = AutoModelForCausalLM.from_pretrained(directory, torch_dtype=torch.bfloat16)
        model.eval()
        with torch.no_grad():
            logits = model(torch.tensor([tokens])).logits[0].float()
        (directory / "logits.bf16.f32").write_bytes(logits.contiguous().numpy().astype("<f4").tobytes())
        meta = {"torch": torch.__version__, "transformers": transformers.__version__, "shape": list(logits.shape)}
        (directory / "bf16.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(f"{directory.name}: {list(logits.shape)}")


if __name__ == "__main__":
    main()
