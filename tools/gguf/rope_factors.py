"""Print the Llama 3 rope factors llama.cpp's convert_hf_to_gguf.py writes (`rope_freqs.weight`)
for a few configurations, as f32 bit patterns, for the table in
crates/backends/src/gguf/export/keys.rs's tests.

The converter computes them with float32 torch tensors and Python numbers; this does the same
operations in the same order (needs torch).

Usage: python tools/gguf/rope_factors.py
"""

import math

import torch

CONFIGS = [
    # (head_dim, rope_theta, factor, original_max_position_embeddings): Llama 3.1 8B, Llama 3.2
    # 1B, and the tiny fixture tests/fixtures/models/llama-gqa-tied.
    (128, 500000.0, 8.0, 8192),
    (64, 500000.0, 32.0, 8192),
    (16, 500000.0, 8.0, 64),
]


def factors(dim, base, factor, old_context_len, low_freq_factor=1.0, high_freq_factor=4.0):
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            out.append(1)
        elif wavelen > low_freq_wavelen:
            out.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32)


for dim, base, factor, old in CONFIGS:
    bits = factors(dim, base, factor, old).view(torch.int32).tolist()
    print(f"// head_dim {dim}, theta {base}, factor {factor}, original context {old}")
    print("[" + ", ".join(f"0x{b & 0xFFFFFFFF:08x}" for b in bits) + "]")
