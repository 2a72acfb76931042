//! llama.cpp's pre-tokenizers for byte-level BPE vocabularies (`tokenizer.ggml.model = gpt2`),
//! by the name `tokenizer.ggml.pre` gives them.
//!
//! llama.cpp (`llm_tokenizer_bpe` in `src/llama-vocab.cpp`, here as vendored by
//! `llama-cpp-sys-2` 0.1.161) splits text with a *list* of regexes applied one after the
//! other: each splits every piece the previous ones left into its matches and the text between
//! them (both kept). A `tokenizers` `Split` pre-tokenizer with the `Isolated` behaviour does the
//! same, so a preset becomes a `Sequence` of such splits, then byte-level encoding.
//!
//! The regexes are llama.cpp's, as facts; two details of how llama.cpp runs them are kept by
//! [`translate`]:
//! - The GPT-2 pattern is run by hand-written code in llama.cpp that also takes a lone run of
//!   whitespace (`\s+`), which the pattern string itself leaves out; [`GPT2`] has it.
//! - A regex that names Unicode categories runs in llama.cpp on a "collapsed" text where every
//!   non-ASCII character stands for its category, so `\p{Lu}`, `\p{Ll}`, `\p{Lt}`, `\p{Lm}`
//!   and `\p{Lo}` all mean "any letter".
//! - Before any regex runs, llama.cpp replaces non-ASCII whitespace in the text by `\v`: a
//!   class of non-ASCII characters (`[一-龥ࠀ-一]`, whose range holds U+3000) never matches
//!   it there, while `\s` does.
//!
//! [`translate`] rewrites the regexes so that a Unicode regex engine matches the same text.
//!
//! Presets llama.cpp runs with code of its own, or without byte-level encoding, are refused
//! with the reason ([`Preset::of`]).

/// The GPT-2 pattern (with the `\s+` llama.cpp's code for it also takes).
pub(crate) const GPT2: &str =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/// One pre-tokenizer: its regexes, in order, and the settings llama.cpp ties to its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Preset {
    /// The regexes, applied one after the other (as llama.cpp writes them).
    pub regexes: &'static [&'static str],
    /// A word that is itself a token is taken whole, without merges (Llama 3's
    /// `ignore_merges`).
    pub ignore_merges: bool,
    /// llama.cpp adds BOS by default for this preset (`tokenizer.ggml.add_bos_token` wins).
    pub add_bos: bool,
    /// llama.cpp has no default BOS id for this preset (only `tokenizer.ggml.bos_token_id`).
    pub no_default_bos: bool,
}

impl Preset {
    /// The preset named `name`; `Err` with the reason for a name llama.cpp knows but that is
    /// not built here, `Ok(None)` for a name llama.cpp does not know either.
    pub(crate) fn of(name: &str) -> Result<Option<Preset>, &'static str> {
        let (regexes, ignore_merges, add_bos, no_default_bos) = match name {
            "default" => (DEFAULT, false, false, false),
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral"
            | "midm-2.0" | "lfm2" | "jina-v5-nano" => (LLAMA3, true, true, false),
            "dbrx" | "smaug-bpe" => (LLAMA3, false, false, false),
            "chatglm-bpe" => (LLAMA3, false, false, true),
            "glm4" | "glm5" => (LLAMA3, true, false, true),
            "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es"
            | "jina-v2-de" | "a.x-4.0" | "mellum" | "modern-bert" | "exaone4" | "mpt" | "olmo"
            | "jais" | "trillion" | "granite-docling" => (GPT2_ONLY, false, false, false),
            "starcoder" | "refact" | "command-r" | "smollm" | "codeshell" | "exaone"
            | "minerva-7b" | "mellum2" => (DIGITS_GPT2, false, false, false),
            "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" | "stablelm2"
            | "hunyuan" | "solar-open" | "grok-2" => (QWEN2, false, false, false),
            "qwen35" => (QWEN35, false, false, false),
            "minicpm5" => (MINICPM5, true, false, false),
            "laguna" => (LAGUNA, false, false, false),
            "ufakzeka" => (UFAKZEKA, false, false, false),
            "seed-coder" => (SEED_CODER, false, false, false),
            "bailingmoe" | "bailingmoe2" | "llada-moe" => (BAILINGMOE, false, false, false),
            "exaone-moe" => (EXAONE_MOE, false, false, false),
            "jais-2" => (JAIS2, false, false, false),
            "tekken" => (TEKKEN, true, true, false),
            "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => {
                (GPT4O, false, false, false)
            }
            "granite-embed-multi-97m" => (GRANITE_EMB_MULTI, true, false, false),
            "youtu" => (YOUTU, true, false, false),
            "falcon" => (FALCON, false, false, false),
            "deepseek-llm" => (DEEPSEEK_LLM, false, false, false),
            "deepseek-coder" => (DEEPSEEK_CODER, false, false, false),
            "deepseek-v3" | "hunyuan-dense" | "hy_v4" | "joyai-llm" => {
                (DEEPSEEK3_LLM, false, false, false)
            }
            "spark2_5" => (SPARK2_5, false, false, false),
            "bloom" | "gpt3-finnish" | "poro-chat" => (BLOOM, false, false, false),
            "viking" => (VIKING, false, false, false),
            "chameleon" => (CHAMELEON, false, true, false),
            "gemma4" | "granite-embed-multi-311m" | "mmbert" | "sarvam-moe" | "whitespace" => {
                return Err("llama.cpp merges raw UTF-8 for it, without byte-level encoding");
            }
            "jina-v1-en" | "jina-v2-code" | "roberta-bpe" => {
                return Err("llama.cpp appends a separator token for it (BERT-style)");
            }
            "kimi-k2" | "afmoe" => {
                return Err("llama.cpp splits its text with hand-written code, not regexes");
            }
            "tiny_aya" | "cohere2moe" => {
                return Err("its regex relies on C++ std::regex's ASCII `\\d` and `\\b`");
            }
            "superbpe" => return Err("its regex splits at empty matches"),
            _ => return Ok(None),
        };
        Ok(Some(Preset {
            regexes,
            ignore_merges,
            add_bos,
            no_default_bos,
        }))
    }
}

/// Whitespace outside ASCII (Unicode's `White_Space`, as llama.cpp's table has it), which
/// llama.cpp replaces by `\v` in the text before running a regex.
const NON_ASCII_SPACE: &str =
    "\u{85}\u{A0}\u{1680}\u{2000}-\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}";

/// Rewrites one of llama.cpp's regexes so that a Unicode regex engine matches what llama.cpp
/// matches (see the module docs):
/// - in a regex naming Unicode categories, `\p{Lu}`, `\p{Ll}`, `\p{Lt}`, `\p{Lm}` and
///   `\p{Lo}` mean any letter;
/// - a bracket class that names non-ASCII characters but not `\s` never matches non-ASCII
///   whitespace, because llama.cpp's regex sees `\v` there (`[^...]` always matches it).
pub(crate) fn translate(regex: &str) -> String {
    const CATEGORIES: [&str; 10] = [
        "\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}", "\\p{Lu}", "\\p{Ll}", "\\p{Lt}",
        "\\p{Lm}", "\\p{Lo}",
    ];
    let mut r = regex.to_string();
    if CATEGORIES.iter().any(|c| regex.contains(c)) {
        for sub in ["\\p{Lu}", "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"] {
            r = r.replace(sub, "\\p{L}");
        }
    }
    map_classes(&r, |class| {
        if class.is_ascii() || class.contains("\\s") {
            return None;
        }
        Some(format!("&&[^{NON_ASCII_SPACE}]"))
    })
}

/// Calls `extra` on the inside of every bracket class of `regex` (escapes skipped; a `]`
/// right after `[` or `[^` is a literal) and adds what it returns before the class's `]`.
fn map_classes(regex: &str, extra: impl Fn(&str) -> Option<String>) -> String {
    let chars: Vec<char> = regex.chars().collect();
    let mut out = String::with_capacity(regex.len() + 32);
    // The text of the class being read, when inside one.
    let mut class: Option<String> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let sink = class.as_mut().unwrap_or(&mut out);
        if c == '\\' && i + 1 < chars.len() {
            sink.push(c);
            sink.push(chars[i + 1]);
            i += 2;
            continue;
        }
        match (c, class.take()) {
            ('[', None) => {
                out.push('[');
                let mut inside = String::new();
                if chars.get(i + 1) == Some(&'^') {
                    inside.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    inside.push(']');
                    i += 1;
                }
                class = Some(inside);
            }
            (']', Some(inside)) => {
                out.push_str(&inside);
                if let Some(more) = extra(&inside) {
                    out.push_str(&more);
                }
                out.push(']');
            }
            (c, Some(mut inside)) => {
                inside.push(c);
                class = Some(inside);
            }
            (c, None) => out.push(c),
        }
        i += 1;
    }
    if let Some(inside) = class {
        // An unclosed class: left as it is, for the regex engine to refuse.
        out.push_str(&inside);
    }
    out
}

// The regex lists, as llama.cpp writes them (`llm_tokenizer_bpe::llm_tokenizer_bpe`).

const DEFAULT: &[&str] = &[
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    GPT2,
    "\\p{N}+",
    "[0-9][0-9][0-9]",
];

const GPT2_ONLY: &[&str] = &[GPT2];

const DIGITS_GPT2: &[&str] = &["\\p{N}", GPT2];

const LLAMA3: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const QWEN2: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const QWEN35: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const MINICPM5: &[&str] = &[
    "\\p{N}{1,3}",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const LAGUNA: &[&str] = &[
    "[^\\n]+|[\\n]+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const UFAKZEKA: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const SEED_CODER: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const BAILINGMOE: &[&str] = &[
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
];

const EXAONE_MOE: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
];

const JAIS2: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
];

const TEKKEN: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const GPT4O: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const GRANITE_EMB_MULTI: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const YOUTU: &[&str] = &[
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

const FALCON: &[&str] = &["[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"];

const DEEPSEEK_LLM: &[&str] = &[
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
];

const DEEPSEEK_CODER: &[&str] = &[
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
];

const DEEPSEEK3_LLM: &[&str] = &[
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
];

const SPARK2_5: &[&str] = &[
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
];

const BLOOM: &[&str] = &[" ?[^(\\s|.,!?…。，、।۔،)]+"];

const VIKING: &[&str] = &[" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"];

const CHAMELEON: &[&str] = &[
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\\t\\n]|    |  )",
    "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]",
    GPT2,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_compiles_as_a_regex() {
        let names = [
            "default",
            "llama3",
            "dbrx",
            "chatglm-bpe",
            "glm4",
            "gpt-2",
            "smollm",
            "qwen2",
            "qwen35",
            "minicpm5",
            "laguna",
            "ufakzeka",
            "seed-coder",
            "bailingmoe",
            "exaone-moe",
            "jais-2",
            "tekken",
            "gpt-4o",
            "granite-embed-multi-97m",
            "youtu",
            "falcon",
            "deepseek-llm",
            "deepseek-coder",
            "deepseek-v3",
            "spark2_5",
            "bloom",
            "viking",
            "chameleon",
        ];
        for name in names {
            let preset = Preset::of(name).unwrap().unwrap();
            for r in preset.regexes {
                let t = translate(r);
                fancy_regex::Regex::new(&t).unwrap_or_else(|e| panic!("{name}: {t}: {e}"));
            }
        }
    }

    #[test]
    fn unknown_and_unsupported_names_are_told_apart() {
        assert_eq!(Preset::of("no-such-pre"), Ok(None));
        assert!(Preset::of("kimi-k2").is_err());
        assert!(Preset::of("gemma4").is_err());
        let llama3 = Preset::of("llama-bpe").unwrap().unwrap();
        assert!(llama3.ignore_merges && llama3.add_bos);
        assert!(Preset::of("chatglm-bpe").unwrap().unwrap().no_default_bos);
    }

    #[test]
    fn translation_keeps_llama_cpp_meanings() {
        // ASCII classes and regexes without categories are left alone.
        assert_eq!(translate("[\r\n]"), "[\r\n]");
        assert_eq!(translate(GPT2), GPT2);
        // Letter subcategories are any letter.
        assert_eq!(translate("[\\p{Lu}\\p{M}]*"), "[\\p{L}\\p{M}]*");
        // Non-ASCII classes never match non-ASCII whitespace; negated ones always do.
        let cjk = fancy_regex::Regex::new(&translate("^[ࠀ-一]$")).unwrap();
        assert!(cjk.is_match("\u{4000}").unwrap());
        assert!(!cjk.is_match("\u{3000}").unwrap());
        let not_cjk = fancy_regex::Regex::new(&translate("^[^ࠀ-一]$")).unwrap();
        assert!(not_cjk.is_match("\u{3000}").unwrap());
        assert!(!not_cjk.is_match("\u{4000}").unwrap());
        // A class with \s keeps its meaning.
        let with_space = translate("[\\s。]");
        assert_eq!(with_space, "[\\s。]");
        // Escaped brackets neither open nor close a class.
        assert_eq!(translate("\\[x\\]"), "\\[x\\]");
        assert_eq!(
            translate("[\\]ー]"),
            format!("[\\]ー&&[^{NON_ASCII_SPACE}]]")
        );
    }
}
