#!/usr/bin/env python3
"""Make the tiny random Hugging Face checkpoints that sieve-backends is tested against.

Each fixture is a complete model directory, written by transformers' own `save_pretrained`:
config.json, generation_config.json, the safetensors weights (single file or sharded),
tokenizer.json, and what transformers computes with it:

- expected.json: the input token sequence, the logits' shape, a greedy continuation (HF
  `generate(do_sample=False)`), and the versions used;
- logits.f32: the float32 logits at every position of that sequence (eval mode), raw
  little-endian, row-major [positions, vocab].

Weights are drawn with a fixed seed, scaled so logits are of order 1-10 (so a 1e-4 tolerance
is a real test), and rounded to the storage dtype *before* the expected logits are computed, so
that an f16/bf16 checkpoint widened to f32 is exactly the model transformers ran.

New fixtures may carry a chat template of our own (tokenizer_config.json and
chat_template.jinja, saved by transformers' tokenizer `save_pretrained`), so that
`sieve generate --chat` can be tried on them.

Usage (from the repository root):
    python3 -m venv /work/venv && /work/venv/bin/pip install -r tools/requirements.txt
    /work/venv/bin/python tools/make_fixtures.py [--out tests/fixtures/models] [NAME ...]

With NAMEs, only those fixtures are written (the others are left as they are: the first four
were written by transformers 4.57.6 and torch 2.9.1, as their expected.json records, and are
kept byte-identical by not regenerating them).
"""

import argparse
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GenerationConfig,
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

SEQ_LEN = 40
GREEDY_PROMPT = 6
GREEDY_NEW = 12

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A sieve keeps the tokens that pass every stage of the pipeline.",
    "temperature, top_k, top_p and min_p shape the distribution before a token is drawn.",
    "Grüße aus Köln: 10 € für drei Brötchen, ½ Liter Milch.",
    "日本語のテキストも少しだけ入れておく。",
    "emoji 🙂 and 🚀 need four bytes each in UTF-8.",
    "def main():\n    print('hello, world')\n",
    "the the the of of and and to to in in is is it it",
]


def byte_level_tokenizer(vocab_size):
    """GPT-2 style byte-level BPE (Llama 3, Qwen2, SmolLM): BOS added by the post-processor."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<s>", "</s>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    return tok


def learn_merges(words, n_merges):
    """Plain BPE on word counts: merge the most frequent pair, ties to the smallest pair, so the
    result does not depend on hash order (the tokenizers trainer's does, here)."""
    counts = Counter(tuple(w) for w in words)
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for w, c in counts.items():
            for pair in zip(w, w[1:]):
                pairs[pair] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged = Counter()
        for w, c in counts.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        counts = merged
    return merges


def sentencepiece_tokenizer(vocab_size):
    """Llama 2 / Mistral style: `▁` for spaces, 256 `<0xNN>` byte-fallback tokens, the corpus'
    frequent characters, then merges; rare characters fall back to bytes."""
    specials = ["<unk>", "<s>", "</s>"]
    text = "\n".join(CORPUS)
    words = re.findall("▁[^▁]*|[^▁]+", "▁" + text.replace(" ", "▁"))
    chars = Counter(c for w in words for c in w)
    alphabet = sorted((c for c, n in chars.items() if n >= 3), key=lambda c: (-chars[c], c))
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for c in alphabet:
        vocab[c] = len(vocab)
    known = [[c for c in w if c in vocab] for w in words]
    merges = learn_merges(known, vocab_size - len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens(specials)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", vocab["<s>"])]
    )
    return tok


# A chat template of our own for the new fixtures (the turn markers are the tokenizer's
# special tokens, so the rendered prompt encodes them as single tokens).
FIXTURE_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role ' + message['role']) }}"
    "{% endif %}"
    "<|endoftext|>{{ message['role'] }}\n{{ message['content'] | trim }}</s>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
)


def randomize(model, seed):
    """Weights of order 1/sqrt(fan_in), norms around 1, biases small but present."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5 * 1.5)


def round_to(model, dtype):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).to(torch.float32))


def write_fixture(
    out, name, model_cls, config, tokenizer, dtype, seed, shard=None, eos=None, gen_extra=None, chat_template=None
):
    d = out / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    torch.manual_seed(seed)
    model = model_cls(config).eval()
    randomize(model, seed)
    round_to(model, dtype)

    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, config.vocab_size, (SEQ_LEN,), generator=g)
    with torch.no_grad():
        logits = model(tokens[None]).logits[0].to(torch.float32)
    assert logits.shape == (SEQ_LEN, config.vocab_size)

    gen = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=eos if eos is not None else config.eos_token_id,
        **(gen_extra or {}),
    )
    model.generation_config = gen
    with torch.no_grad():
        out_ids = model.generate(
            tokens[None, :GREEDY_PROMPT],
            attention_mask=torch.ones(1, GREEDY_PROMPT, dtype=torch.long),
            do_sample=False,
            max_new_tokens=GREEDY_NEW,
            pad_token_id=gen.eos_token_id if isinstance(gen.eos_token_id, int) else gen.eos_token_id[0],
            temperature=None,
            top_p=None,
            top_k=None,
        )[0, GREEDY_PROMPT:]

    save_kwargs = {"safe_serialization": True}
    if shard:
        save_kwargs["max_shard_size"] = shard
    model.to(dtype).save_pretrained(d, **save_kwargs)
    if chat_template is None:
        tokenizer.save(str(d / "tokenizer.json"))
    else:
        PreTrainedTokenizerFast(
            tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", chat_template=chat_template
        ).save_pretrained(d)
    (d / "logits.f32").write_bytes(logits.contiguous().numpy().astype("<f4").tobytes())
    expected = {
        "tokens": tokens.tolist(),
        "shape": list(logits.shape),
        "greedy": {"prompt_tokens": GREEDY_PROMPT, "max_new_tokens": GREEDY_NEW, "tokens": out_ids.tolist()},
        "dtype": str(dtype).removeprefix("torch."),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "seed": seed,
    }
    (d / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    size = sum(f.stat().st_size for f in d.iterdir())
    print(f"{name}: {size / 1024:.0f} KiB, logits max |x| = {logits.abs().max():.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/fixtures/models", type=Path)
    parser.add_argument("names", nargs="*", help="fixtures to write (default: all)")
    args = parser.parse_args()
    out = args.out
    torch.set_num_threads(1)
    wanted = set(args.names)

    def write_fixture(out, name, *a, **kw):
        if not wanted or name in wanted:
            globals()["write_fixture"](out, name, *a, **kw)

    bl = byte_level_tokenizer(300)
    sp = sentencepiece_tokenizer(300)
    bl_vocab = bl.get_vocab_size()
    sp_vocab = sp.get_vocab_size()
    bl_eos = bl.token_to_id("</s>")

    # Llama 3 style: GQA (4 query heads over 2 kv heads), llama3 RoPE scaling, tied embeddings.
    write_fixture(
        out,
        "llama-gqa-tied",
        LlamaForCausalLM,
        LlamaConfig(
            vocab_size=bl_vocab,
            hidden_size=64,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            rope_theta=500000.0,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
            tie_word_embeddings=True,
            bos_token_id=bl.token_to_id("<s>"),
            eos_token_id=bl_eos,
        ),
        bl,
        torch.float16,
        seed=1,
        eos=[bl_eos, bl.token_to_id("<|endoftext|>")],
        gen_extra={"do_sample": True, "temperature": 0.6, "top_p": 0.9},
    )
    # Llama 2 style in f32: multi-head attention with biases, linear RoPE scaling.
    write_fixture(
        out,
        "llama-f32-linear",
        LlamaForCausalLM,
        LlamaConfig(
            vocab_size=bl_vocab,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=64,
            rms_norm_eps=1e-6,
            rope_scaling={"type": "linear", "factor": 2.0},
            attention_bias=True,
            tie_word_embeddings=True,
            bos_token_id=bl.token_to_id("<s>"),
            eos_token_id=bl_eos,
        ),
        bl,
        torch.float32,
        seed=2,
    )
    # Qwen2: q/k/v biases, untied head, a vocabulary padded past the tokenizer's.
    write_fixture(
        out,
        "qwen2-bias",
        Qwen2ForCausalLM,
        Qwen2Config(
            vocab_size=bl_vocab + 20,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
            rms_norm_eps=1e-6,
            rope_theta=1000000.0,
            tie_word_embeddings=False,
            bos_token_id=bl.token_to_id("<s>"),
            eos_token_id=bl.token_to_id("<|endoftext|>"),
        ),
        bl,
        torch.bfloat16,
        seed=3,
    )
    # Mistral: one kv head (MQA), a sliding window shorter than the sequence, bf16, sharded,
    # SentencePiece-style tokenizer.
    write_fixture(
        out,
        "mistral-window-sharded",
        MistralForCausalLM,
        MistralConfig(
            vocab_size=sp_vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=1,
            max_position_embeddings=128,
            rms_norm_eps=1e-5,
            sliding_window=16,
            tie_word_embeddings=False,
            bos_token_id=sp.token_to_id("<s>"),
            eos_token_id=sp.token_to_id("</s>"),
        ),
        sp,
        torch.bfloat16,
        seed=4,
        shard="20KB",
    )
    # Qwen3: q/k norms, head_dim 16 while hidden/heads is 8, attention biases, untied head,
    # a 12-token window on the second layer; transformers 5 writes rope_parameters.
    write_fixture(
        out,
        "qwen3-headdim",
        Qwen3ForCausalLM,
        Qwen3Config(
            vocab_size=bl_vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=128,
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            attention_bias=True,
            use_sliding_window=True,
            sliding_window=12,
            layer_types=["full_attention", "sliding_attention"],
            tie_word_embeddings=False,
            bos_token_id=bl.token_to_id("<s>"),
            eos_token_id=bl_eos,
        ),
        bl,
        torch.bfloat16,
        seed=5,
        chat_template=FIXTURE_CHAT_TEMPLATE,
    )
    # Gemma 2: sandwich norms (1 + w), GeGLU, scaled embeddings, query_pre_attn_scalar, softcaps
    # small enough to matter, a 16-token window on layer 0, tied embeddings, f32.
    write_fixture(
        out,
        "gemma2-softcap",
        Gemma2ForCausalLM,
        Gemma2Config(
            vocab_size=bl_vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=128,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=24,
            sliding_window=16,
            attn_logit_softcapping=3.0,
            final_logit_softcapping=20.0,
            bos_token_id=bl.token_to_id("<s>"),
            eos_token_id=bl_eos,
            pad_token_id=bl.token_to_id("<|endoftext|>"),
        ),
        bl,
        torch.float32,
        seed=6,
        chat_template=FIXTURE_CHAT_TEMPLATE,
    )
    # Gemma 3 text: q/k norms, two sliding layers (8-token window, local RoPE base) then one
    # global layer (its own base with linear scaling), no softcaps, bf16.
    write_fixture(
        out,
        "gemma3-window",
        Gemma3ForCausalLM,
        Gemma3TextConfig(
            vocab_size=bl_vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=8,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=8,
            sliding_window=8,
            layer_types=["sliding_attention", "sliding_attention", "full_attention"],
            rope_parameters={
                "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 100000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0},
            },
            bos_token_id=bl.token_to_id("<s>"),
            eos_token_id=bl_eos,
            pad_token_id=bl.token_to_id("<|endoftext|>"),
        ),
        bl,
        torch.bfloat16,
        seed=7,
        chat_template=FIXTURE_CHAT_TEMPLATE,
    )


if __name__ == "__main__":
    main()
