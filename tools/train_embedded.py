"""Trains the model pair embedded in sieve: a small Llama-architecture *target* and a much
smaller *draft* sharing one byte-level BPE tokenizer, on the grammar-generated stories of
`tools/story_corpus.py`, and writes both as ordinary Hugging Face directories (config.json,
bf16 model.safetensors, tokenizer.json, generation_config.json, README.md card) plus the loss
curve `docs/embedded-loss.png`.

    python3 tools/story_corpus.py /tmp/corpus
    python tools/train_embedded.py /tmp/corpus models/embedded   # in the venv of tools/README.md

Everything is seeded (corpus, tokenizer, initialisation, batches); torch runs on the CPU with
the threads it finds. See models/embedded/*/README.md for the recipe, the wall time and the
held-out perplexity of the committed weights.
"""
import argparse, json, math, os, random, time

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

BOS, EOS = '<s>', '</s>'
SIZES = {
    'target': dict(hidden_size=192, intermediate_size=512, num_hidden_layers=4,
                   num_attention_heads=4, num_key_value_heads=2),
    'draft': dict(hidden_size=96, intermediate_size=256, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=1),
}


def train_tokenizer(lines, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=['<unk>', BOS, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f'{BOS} $A', pair=f'{BOS} $A {BOS} $B', special_tokens=[(BOS, tok.token_to_id(BOS))])
    return tok


def pack(tok, lines, seq, eos_rate, seed):
    """Token ids of the stories as documents: `<s>` starts a document; a story ends the
    document with `</s>` with probability `eos_rate`, else a newline leads into the next
    story of the same document (so the model also learns to go on after a story)."""
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)
    newline = tok.encode('\n', add_special_tokens=False).ids
    r = random.Random(seed)
    ids, start = [], True
    for enc in tok.encode_batch(lines, add_special_tokens=False):
        if start:
            ids.append(bos)
        ids.extend(enc.ids)
        start = r.random() < eos_rate
        ids.extend([eos] if start else newline)
    n = len(ids) // (seq + 1)
    return torch.tensor(ids[: n * (seq + 1)]).view(n, seq + 1), len(ids)


def evaluate(model, data, batch):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(data), batch):
            x = data[i:i + batch]
            out = model(input_ids=x[:, :-1], labels=x[:, :-1].clone())
            # labels are shifted inside the model: the mean is over seq - 1 predictions
            total += out.loss.item() * x.shape[0] * (x.shape[1] - 2)
            count += x.shape[0] * (x.shape[1] - 2)
    model.train()
    return total / count


def train(name, tok, train_data, heldout, args, log):
    torch.manual_seed(args.seed)
    cfg = LlamaConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=args.context,
                      bos_token_id=tok.token_to_id(BOS), eos_token_id=tok.token_to_id(EOS),
                      tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-5,
                      **SIZES[name])
    model = LlamaForCausalLM(cfg)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    steps = args.steps[name]
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    g = torch.Generator().manual_seed(args.seed)
    curve, start = [], time.time()
    for step in range(steps):
        idx = torch.randint(0, len(train_data), (args.batch,), generator=g)
        x = train_data[idx]
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        curve.append(loss.item())
        if step % 50 == 0 or step == steps - 1:
            log(f'{name} step {step}/{steps} loss {loss.item():.3f} ({time.time() - start:.0f} s)')
    wall = time.time() - start
    held = evaluate(model, heldout, args.batch)
    log(f'{name}: {params} parameters, {wall:.0f} s, held-out loss {held:.4f}, perplexity {math.exp(held):.3f}')
    return model, curve, dict(params=params, wall_s=wall, heldout_loss=held, heldout_ppl=math.exp(held))


def save(name, model, tok, out, info, args):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(d, safe_serialization=True)
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, unk_token='<unk>').save_pretrained(d)
    GenerationConfig(bos_token_id=tok.token_to_id(BOS), eos_token_id=tok.token_to_id(EOS)).save_pretrained(d)
    for extra in ['tokenizer_config.json', 'special_tokens_map.json']:
        p = os.path.join(d, extra)
        if os.path.exists(p):
            os.remove(p)
    s = SIZES[name]
    with open(os.path.join(d, 'README.md'), 'w') as f:
        f.write(f"""# sieve embedded {name} model

A {info['params'] / 1e6:.2f} M-parameter Llama-architecture model ({s['num_hidden_layers']} layers,
hidden {s['hidden_size']}, {s['num_attention_heads']} heads / {s['num_key_value_heads']} key-value heads,
SwiGLU {s['intermediate_size']}, tied embeddings, context {args.context}) trained from scratch so that
`sieve generate` writes English on a fresh clone, with no download. {'It is the *draft* of the pair: the same tokenizer as the target, for speculative decoding.' if name == 'draft' else 'Its *draft* (`--model embedded-draft`) shares its tokenizer.'}

- **Data**: {args.stories} short children's stories generated by `tools/story_corpus.py` (seed {args.seed}) from
  a grammar of characters, places, objects, feelings, problems and dialogue. The corpus is
  generated by sieve's own script, so no third-party licence applies to it or to this model.
- **Tokenizer**: byte-level BPE, {tok.get_vocab_size()} tokens, trained with the `tokenizers` library on the
  same corpus; `<s>` is added at the start of a prompt. In training, a story ends its document
  with `</s>` one time in {round(1 / args.eos_rate)}; otherwise a newline leads into the next story.
- **Training**: `tools/train_embedded.py`, PyTorch {torch.__version__}, transformers' `LlamaForCausalLM`,
  AdamW (lr {args.lr}, betas 0.9/0.95, weight decay 0.1), 100 warm-up steps and cosine decay,
  {args.steps[name]} steps of {args.batch} × {args.seq} tokens, seed {args.seed}, on the CPU of a 2-core
  development machine: {info['wall_s'] / 60:.1f} minutes. Loss curve: `docs/embedded-loss.png`.
- **Held-out perplexity**: {info['heldout_ppl']:.3f} (loss {info['heldout_loss']:.4f} nats per token) on
  {args.heldout} stories the model never saw, drawn from the same grammar with another seed.
- **Weights**: bf16 safetensors. Licence: MIT OR Apache-2.0, like sieve.
- **Limits**: it knows only the world of its stories; outside it, it writes story-like nonsense.
""")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('corpus')
    ap.add_argument('out')
    ap.add_argument('--vocab', type=int, default=1024)
    ap.add_argument('--seq', type=int, default=256)
    ap.add_argument('--context', type=int, default=1024)
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--target-steps', type=int, default=1200)
    ap.add_argument('--draft-steps', type=int, default=900)
    ap.add_argument('--lr', type=float, default=3e-3)
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('--eos-rate', type=float, default=0.25)
    ap.add_argument('--stories', type=int, default=40000)
    ap.add_argument('--heldout', type=int, default=500)
    ap.add_argument('--plot', default='docs/embedded-loss.png')
    args = ap.parse_args()
    args.steps = {'target': args.target_steps, 'draft': args.draft_steps}
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    log_lines = []
    def log(msg):
        print(msg, flush=True)
        log_lines.append(msg)
    lines = open(os.path.join(args.corpus, 'train.txt')).read().splitlines()[: args.stories]
    held_lines = open(os.path.join(args.corpus, 'heldout.txt')).read().splitlines()[: args.heldout]
    tok = train_tokenizer(['\n'.join(lines[i:i + 8]) for i in range(0, len(lines), 8)], args.vocab)
    train_data, n_tokens = pack(tok, lines, args.seq, args.eos_rate, args.seed)
    heldout, _ = pack(tok, held_lines, args.seq, args.eos_rate, args.seed + 1)
    log(f'corpus: {len(lines)} stories, {n_tokens} tokens; held out: {len(heldout)} sequences')
    curves, infos = {}, {}
    for name in ['target', 'draft']:
        model, curves[name], infos[name] = train(name, tok, train_data, heldout, args, log)
        save(name, model, tok, args.out, infos[name], args)
    with open(os.path.join(args.out, 'training.json'), 'w') as f:
        json.dump({'infos': infos, 'log': log_lines}, f, indent=1)
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, curve in curves.items():
        k = 20
        smooth = [sum(curve[max(0, i - k):i + 1]) / len(curve[max(0, i - k):i + 1]) for i in range(len(curve))]
        ax.plot(smooth, label=f"{name} (held-out ppl {infos[name]['heldout_ppl']:.2f})")
    ax.set_xlabel('step')
    ax.set_ylabel('training loss (nats/token, 20-step mean)')
    ax.set_yscale('log')
    ax.legend()
    ax.set_title('sieve embedded models: training loss')
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.plot), exist_ok=True)
    fig.savefig(args.plot, dpi=100)


if __name__ == '__main__':
    main()
