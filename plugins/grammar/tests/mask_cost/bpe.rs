//! A realistic 32 000-token vocabulary built offline: a byte-level BPE (GPT-2 style, as Llama 3
//! and Qwen use) trained with the `tokenizers` crate on local text, the Python standard
//! library's sources by default. Trained once and cached in cargo's target directory.

use std::path::{Path, PathBuf};

use tokenizers::models::bpe::{BpeTrainer, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, Tokenizer};

/// Vocabulary size of the trained BPE (the end-of-text token included).
pub const VOCAB_SIZE: usize = 32_000;
/// The end-of-text token, id 0.
pub const EOS_TEXT: &str = "<|endoftext|>";
/// Most corpus bytes read for training.
const CORPUS_BYTES: usize = 12 << 20;
/// Where the corpus is read from, unless `SIEVE_BPE_CORPUS` names another directory.
const DEFAULT_CORPUS: &str = "/root/.pyenv/versions/3.11.7/lib/python3.11";

/// Every `.py` file under `dir`, sorted, skipping `site-packages` and test directories.
fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !matches!(
                name,
                "site-packages" | "test" | "tests" | "__pycache__" | "idlelib"
            ) {
                python_files(&p, out);
            }
        } else if name.ends_with(".py") {
            out.push(p);
        }
    }
}

/// The training text: whole files, up to [`CORPUS_BYTES`].
fn corpus() -> Vec<String> {
    let dir = std::env::var("SIEVE_BPE_CORPUS").unwrap_or_else(|_| DEFAULT_CORPUS.to_string());
    let mut files = Vec::new();
    python_files(Path::new(&dir), &mut files);
    let mut texts = Vec::new();
    let mut total = 0;
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f) {
            total += text.len();
            texts.push(text);
            if total >= CORPUS_BYTES {
                break;
            }
        }
    }
    assert!(
        total >= CORPUS_BYTES / 4,
        "only {total} bytes of .py text under {dir}; set SIEVE_BPE_CORPUS to a directory of \
         Python sources"
    );
    texts
}

/// The trained tokenizer: loaded from the cache, or trained and cached.
pub fn tokenizer() -> Tokenizer {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bpe-{VOCAB_SIZE}-v2.json"));
    if let Ok(t) = Tokenizer::from_file(&cache) {
        return t;
    }
    let mut tokenizer = Tokenizer::new(BPE::default());
    // No space added before a text (as Llama 3 and Qwen do), so a document starts as written.
    tokenizer.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
    tokenizer.with_decoder(Some(ByteLevel::default()));
    let trainer = BpeTrainer::builder()
        .vocab_size(VOCAB_SIZE)
        .min_frequency(2)
        .show_progress(false)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .special_tokens(vec![AddedToken::from(EOS_TEXT, true)])
        .build();
    let mut trainer = TrainerWrapper::from(trainer);
    tokenizer
        .train(&mut trainer, corpus().into_iter())
        .expect("BPE training");
    tokenizer.save(&cache, false).expect("cache the tokenizer");
    tokenizer
}

/// The byte a GPT-2 byte-level character stands for.
fn byte_of(c: char) -> Option<u8> {
    let printable = |b: u32| {
        (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    let code = c as u32;
    if code <= 0xFF && printable(code) {
        return Some(code as u8);
    }
    let n = code.checked_sub(0x100)? as usize;
    (0u32..=0xFF)
        .filter(|&b| !printable(b))
        .nth(n)
        .map(|b| b as u8)
}

/// Every token's bytes, by id (the end-of-text token as its text).
pub fn token_bytes(t: &Tokenizer) -> Vec<Vec<u8>> {
    (0..t.get_vocab_size(true) as u32)
        .map(|id| {
            let s = t.id_to_token(id).expect("dense ids");
            if s == EOS_TEXT {
                return s.into_bytes();
            }
            s.chars()
                .map(|c| byte_of(c).expect("a byte-level character"))
                .collect()
        })
        .collect()
}
