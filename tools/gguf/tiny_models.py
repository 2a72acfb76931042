"""Tiny random Hugging Face checkpoints for the GGUF fixtures.

Every linear layer's input width is a multiple of 256 (the K-quant super-block), so every
llama.cpp type applies to every matrix without llama.cpp's fallback to another type.
The tokenizer is a small byte-level BPE trained here on a fixed text, so that
convert_hf_to_gguf.py has a vocabulary to write (the logits fixtures feed ids directly).
"""

import json
from pathlib import Path

import torch

# Fixed training text for the tiny BPE: a few languages, code, digits.
TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away.",
    "Once upon a time there was a little model that read tokens and wrote logits.",
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(add(i, i))",
    "Le renard brun saute par-dessus le chien paresseux. Der Hund schläft.",
    "1 22 333 4444 55555 3.14159 2718281828 0x1F 100% 12:30",
    "Hello, world! How are you today? I am fine, thank you.",
]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# Architectures: the llama family (GQA, untied or tied) and qwen2 (q/k/v biases).
MODELS = {
    "llama": dict(
        arch="llama",
        hidden=256,
        intermediate=512,
        layers=1,
        heads=4,
        kv_heads=2,
        tied=False,
        vocab=320,
        seed=1,
    ),
    "qwen2": dict(
        arch="qwen2",
        hidden=256,
        intermediate=256,
        layers=2,
        heads=4,
        kv_heads=2,
        tied=True,
        vocab=320,
        seed=2,
    ),
}


def train_tokenizer(vocab_size):
    """A byte-level BPE (GPT-2 pre-tokenizer) with `vocab_size` entries, specials at the end."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    tok.add_special_tokens(SPECIAL_TOKENS)
    if tok.get_vocab_size() != vocab_size:
        raise SystemExit(f"tiny tokenizer has {tok.get_vocab_size()} tokens, wanted {vocab_size}")
    return tok


def write_model(name, out_dir):
    """Writes model `name` (a key of MODELS) as an f32 safetensors checkpoint + tokenizer."""
    spec = MODELS[name]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(spec["vocab"])
    eos = tok.token_to_id("<|endoftext|>")
    common = dict(
        vocab_size=spec["vocab"],
        hidden_size=spec["hidden"],
        intermediate_size=spec["intermediate"],
        num_hidden_layers=spec["layers"],
        num_attention_heads=spec["heads"],
        num_key_value_heads=spec["kv_heads"],
        max_position_embeddings=512,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=spec["tied"],
        bos_token_id=eos,
        eos_token_id=eos,
    )
    torch.manual_seed(spec["seed"])
    if spec["arch"] == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        from transformers import Qwen2Config, Qwen2ForCausalLM

        model = Qwen2ForCausalLM(Qwen2Config(**common))
    # Random init gives tiny norms and zero biases; perturb them so they matter.
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif pname.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    model = model.to(torch.float32)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|endoftext|>",
                "eos_token": "<|endoftext|>",
                "add_bos_token": False,
                "model_max_length": 512,
            },
            indent=2,
        )
        + "\n"
    )
    return model
