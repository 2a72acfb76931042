"""transformers' logits for the fixtures: from a checkpoint directory or from a GGUF file
(transformers dequantizes every tensor with the `gguf` package and undoes the converter's
q/k row permutation), and small helpers to write and compare raw little-endian f32."""

from pathlib import Path

import numpy as np
import torch


def logits_from_dir(model_dir, ids):
    """f32 logits [len(ids), vocab] of the safetensors checkpoint in `model_dir`."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return _run(model, ids)


def logits_from_gguf(gguf_path, ids):
    """f32 logits of transformers' own reading of a GGUF file, weights dequantized to f32."""
    from transformers import AutoModelForCausalLM

    path = Path(gguf_path)
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    return _run(model, ids)


def _run(model, ids):
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([ids], dtype=torch.long)).logits[0]
    return out.to(torch.float32).numpy()


def write_f32(path, array):
    """Raw little-endian f32, row-major (the layout of tests/fixtures/models/*/logits.f32)."""
    np.ascontiguousarray(array, dtype="<f4").tofile(path)


def read_f32(path, n_vocab):
    """Reads back what write_f32 wrote, as [positions, n_vocab]."""
    return np.fromfile(path, dtype="<f4").reshape(-1, n_vocab)


def max_abs_diff(a, b):
    """Largest elementwise |a - b| (as a Python float)."""
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
