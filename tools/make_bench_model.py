#!/usr/bin/env python3
"""Write a random model for timing `sieve bench model` offline. Its text is noise; only its
shape matters. Not committed.

- default: shaped like SmolLM2-135M (llama: 30 layers, hidden 576, 9 heads over 3 kv heads,
  vocab 49152, tied embeddings, bf16), about 270 MB;
- `--qwen05`: shaped like Qwen2.5-0.5B (qwen2: 24 layers, hidden 896, 14 heads over 2 kv heads,
  intermediate 4864, q/k/v biases, vocab 151936, tied embeddings, bf16), about 990 MB: the
  model whose GGUFs are over 250 MB, where decode is bound by memory bandwidth.

Usage: python tools/make_bench_model.py OUT_DIR [--tokenizer-only | --qwen05]
"""

import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "smol-random")
    if "--qwen05" in sys.argv[2:]:
        cfg = Qwen2Config(
            vocab_size=151936,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            max_position_embeddings=32768,
            rms_norm_eps=1e-6,
            rope_theta=1000000.0,
            tie_word_embeddings=True,
            bos_token_id=151643,
            eos_token_id=151643,
        )
        torch.manual_seed(0)
        Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out)
        write_tokenizer(out, cfg.vocab_size)
        print(f"wrote {out}")
        return
    cfg = LlamaConfig(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=8192,
        rms_norm_eps=1e-5,
        rope_theta=100000.0,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out)
    write_tokenizer(out, cfg.vocab_size)
    print(f"wrote {out}")


def write_tokenizer(out, vocab_size):
    """A word-level tokenizer with one token per id (`t0` … `t{vocab_size-1}`), so that every
    id the model emits decodes (sieve refuses a tokenizer that misses real ids)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    vocab = {f"t{i}": i for i in range(vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.save(str(out / "tokenizer.json"))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--tokenizer-only":
        write_tokenizer(Path(sys.argv[1]), 49152)
    else:
        main()
