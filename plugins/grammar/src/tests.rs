//! Mask correctness against oracles worked out by hand or by enumerating a finite language,
//! the prompt / history rules, and every error.

use std::collections::BTreeSet;

use sieve_core::{Pipeline, SieveRng};
use sieve_samplers::dist::Dist;
use sieve_samplers::top_k::TopK;

use super::*;

/// A vocabulary of these token texts; `eos` ids are end-of-sequence.
fn vocab(tokens: &[&str], eos: &[u32]) -> Vocab {
    Vocab::new(
        tokens.iter().map(|t| t.as_bytes().to_vec()).collect(),
        eos.to_vec(),
    )
}

fn regex(rx: &str) -> Source {
    Source::Regex(rx.into())
}

fn stage(source: &Source, v: &Vocab) -> Grammar {
    Grammar::new(source, "regex", v).unwrap()
}

/// A step context with `generated` after a prompt of `prompt` tokens.
fn history(prompt: &[u32], generated: &[u32]) -> Vec<u32> {
    prompt.iter().chain(generated).copied().collect()
}

/// The ids that survive `grammar` on all-zero dense logits after `generated`.
fn allowed(g: &mut Grammar, n: usize, generated: &[u32]) -> Vec<u32> {
    let mut c = Candidates::from_logits(&vec![0.0; n]);
    let cx = Context {
        history: generated,
        prompt_len: 0,
        vocab: None,
        step: generated.len(),
    };
    g.apply(&mut c, &cx).unwrap();
    c.iter().map(|(id, _)| id).collect()
}

/// The error message of `grammar` on all-zero logits after `generated`.
fn apply_error(g: &mut Grammar, n: usize, generated: &[u32]) -> String {
    let mut c = Candidates::from_logits(&vec![0.0; n]);
    let cx = Context {
        history: generated,
        prompt_len: 0,
        vocab: None,
        step: generated.len(),
    };
    g.apply(&mut c, &cx).unwrap_err().to_string()
}

const SMALL: [&str; 7] = ["a", "b", "ab", "ba", "c", "abc", "</s>"];

#[test]
fn only_tokens_that_keep_a_prefix_survive() {
    // (ab)+ over a b ab ba c abc </s>(EOS, 6):
    // start: "a" (prefix "a") and "ab" ("ab"); "b", "ba", "c", "abc" start no word; the
    // empty text is not a word, so no EOS.
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    assert_eq!(allowed(&mut g, 7, &[]), [0, 2]);
    // After "a": "b" completes "ab", "ba" gives "aba" (prefix of "abab").
    assert_eq!(allowed(&mut g, 7, &[0]), [1, 3]);
    // After "ab" (a word): "a", "ab" continue, EOS ends.
    assert_eq!(allowed(&mut g, 7, &[0, 1]), [0, 2, 6]);
    // After "aba": "b" and "ba"; not EOS ("aba" is not a word).
    assert_eq!(allowed(&mut g, 7, &[0, 3]), [1, 3]);
}

#[test]
fn eos_survives_only_where_the_grammar_may_end() {
    // [0-9]{2,3} over the ten digits and EOS (10).
    let digits: Vec<String> = (0..10).map(|d| d.to_string()).collect();
    let mut tokens: Vec<&str> = digits.iter().map(String::as_str).collect();
    tokens.push("<|end|>");
    let v = vocab(&tokens, &[10]);
    let mut g = stage(&regex("[0-9]{2,3}"), &v);
    let all_digits: Vec<u32> = (0..10).collect();
    assert_eq!(allowed(&mut g, 11, &[]), all_digits);
    assert_eq!(allowed(&mut g, 11, &[4]), all_digits);
    let mut then_eos = all_digits.clone();
    then_eos.push(10);
    assert_eq!(allowed(&mut g, 11, &[4, 2]), then_eos);
    // Complete and nothing can follow: only EOS.
    assert_eq!(allowed(&mut g, 11, &[4, 2, 7]), [10]);
}

#[test]
fn several_eos_ids_all_end_the_output() {
    let v = vocab(&["x", "<eos>", "<eot>"], &[1, 2]);
    let mut g = stage(&regex("x"), &v);
    assert_eq!(allowed(&mut g, 3, &[]), [0]);
    assert_eq!(allowed(&mut g, 3, &[0]), [1, 2]);
}

#[test]
fn eos_text_is_not_read_as_text() {
    // The EOS token's text "</s>" matches the regex as characters, but the token is EOS:
    // it is allowed only at the end.
    let v = vocab(&["<", "/", "s", ">", "</s>"], &[4]);
    let mut g = stage(&regex("(</s>)?"), &v);
    assert_eq!(allowed(&mut g, 5, &[]), [0, 4]);
    assert_eq!(allowed(&mut g, 5, &[0, 1, 2]), [3]);
}

/// Every word of `words` and its prefixes; `allowed_oracle` lists the tokens `t` of `tokens`
/// for which `text + t` starts some word, and the EOS where `text` is a word.
fn allowed_oracle(words: &[String], tokens: &[String], eos: u32, text: &str) -> Vec<u32> {
    let mut out: Vec<u32> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            let next = format!("{text}{t}");
            words.iter().any(|w| w.starts_with(&next))
        })
        .map(|(i, _)| i as u32)
        .collect();
    if words.iter().any(|w| w == text) {
        out.push(eos);
    }
    out
}

/// Every string over `alphabet` of length 1 to 3.
fn short_strings(alphabet: &str) -> Vec<String> {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut out: Vec<String> = chars.iter().map(|c| c.to_string()).collect();
    for len in 2..=3 {
        let start = out.len();
        let prev: Vec<String> = out
            .iter()
            .filter(|s| s.chars().count() == len - 1)
            .cloned()
            .collect();
        for p in prev {
            for &c in &chars {
                out.push(format!("{p}{c}"));
            }
        }
        assert!(out.len() > start);
    }
    out
}

/// Checks the mask of `source` against the oracle at every prefix of every tokenization
/// (greedy through the vocabulary, and one token per character) of every word.
fn check_finite_language(source: &Source, words: &[&str], alphabet: &str) {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let tokens = short_strings(alphabet);
    let eos = tokens.len() as u32;
    let mut all: Vec<&str> = tokens.iter().map(String::as_str).collect();
    all.push("<eos>");
    let v = vocab(&all, &[eos]);
    let mut g = Grammar::new(source, "regex", &v).unwrap();
    let id_of = |s: &str| tokens.iter().position(|t| t == s).unwrap() as u32;
    let mut checked = 0;
    for word in &words {
        let chars: Vec<char> = word.chars().collect();
        let per_char: Vec<String> = chars.iter().map(|c| c.to_string()).collect();
        let chunked: Vec<String> = chars.chunks(3).map(|c| c.iter().collect()).collect();
        for split in [per_char, chunked] {
            let ids: Vec<u32> = split.iter().map(|s| id_of(s)).collect();
            for k in 0..=ids.len() {
                let text: String = split[..k].concat();
                let want = allowed_oracle(&words, &tokens, eos, &text);
                let got = allowed(&mut g, all.len(), &ids[..k]);
                assert_eq!(got, want, "{source:?} after {text:?}");
                checked += 1;
            }
        }
    }
    assert!(checked > words.len());
}

#[test]
fn regex_masks_match_a_finite_language_oracle() {
    let words = [
        "cat", "cats", "car", "cart", "dog", "dogs", "do", "act", "tacos",
    ];
    let rx = "cats?|cart?|dogs?|do|act|tacos";
    check_finite_language(&regex(rx), &words, "acdgorst");
}

#[test]
fn lark_masks_match_a_finite_language_oracle() {
    // Two words joined by a space: every pair of "go", "got", "toga".
    let lark = "start: w \" \" w\nw: \"go\" | \"got\" | \"toga\"\n";
    let base = ["go", "got", "toga"];
    let words: Vec<String> = base
        .iter()
        .flat_map(|a| base.iter().map(move |b| format!("{a} {b}")))
        .collect();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    check_finite_language(&Source::Lark(lark.into()), &refs, "agot ");
}

#[test]
fn json_schema_enum_masks_match_the_oracle() {
    let schema = serde_json::json!({"enum": ["ab", "ba", 12]});
    let words = ["\"ab\"", "\"ba\"", "12"];
    check_finite_language(&Source::JsonSchema(schema), &words, "ab12\"");
}

/// A vocabulary that spells JSON: every printable ASCII character, a few longer tokens, EOS.
fn json_vocab() -> Vocab {
    let mut tokens: Vec<String> = (0x20u8..0x7f).map(|b| (b as char).to_string()).collect();
    for t in [
        "{\"", "\":", "\",", "\"}", "true", "false", "null", "name", "age", "tags", "\"]", "[\"",
        "12", "345", "ab", "cd", "}\n", "<|end|>",
    ] {
        tokens.push(t.into());
    }
    let eos = tokens.len() as u32 - 1;
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    vocab(&refs, &[eos])
}

/// Random logits for each step, drawn from `rng`.
fn random_logits(rng: &mut SieveRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| (rng.next_f32() - 0.5) * 8.0).collect()
}

/// Generates with `grammar | dist` on random logits until EOS (or `max` tokens); the text.
fn generate(source: &Source, v: &Vocab, seed: u64, max: usize) -> (String, bool) {
    let grammar = Grammar::new(source, "json_schema", v).unwrap();
    let mut pipeline = Pipeline::new(vec![
        ("grammar".to_string(), Box::new(grammar)),
        ("dist".to_string(), Box::new(Dist::new(seed))),
    ]);
    let mut rng = SieveRng::new(seed, "logits");
    let prompt = [5u32, 6, 7];
    for &t in &prompt {
        pipeline.accept(t);
    }
    let mut hist = prompt.to_vec();
    let mut text = Vec::new();
    for _ in 0..max {
        let mut c = Candidates::from_logits(&random_logits(&mut rng, v.len()));
        let cx = Context {
            history: &hist,
            prompt_len: prompt.len(),
            vocab: Some(v),
            step: hist.len() - prompt.len(),
        };
        let t = pipeline.sample(&mut c, &cx).unwrap();
        pipeline.accept(t);
        if v.eos().contains(&t) {
            return (String::from_utf8(text).unwrap(), true);
        }
        text.extend_from_slice(v.token_bytes(t).unwrap());
        hist.push(t);
    }
    (String::from_utf8(text).unwrap(), false)
}

#[test]
fn generated_json_parses_and_follows_the_schema() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 6},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"enum": ["ab", "cd"]}, "maxItems": 3}
        },
        "required": ["name", "age", "tags"],
        "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false}
    });
    let v = json_vocab();
    let source = Source::JsonSchema(schema);
    let mut texts = BTreeSet::new();
    for seed in 0..8 {
        let (text, ended) = generate(&source, &v, seed, 200);
        assert!(ended, "seed {seed}: no EOS within 200 tokens: {text:?}");
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("seed {seed}: {text:?} is not JSON: {e}"));
        let obj = value.as_object().expect("an object");
        assert_eq!(obj.len(), 3, "{text}");
        assert!(obj["name"].as_str().unwrap().chars().count() <= 6, "{text}");
        let age = obj["age"].as_i64().expect("an integer age");
        assert!((0..=120).contains(&age), "{text}");
        let tags = obj["tags"].as_array().unwrap();
        assert!(tags.len() <= 3, "{text}");
        assert!(tags.iter().all(|t| t == "ab" || t == "cd"), "{text}");
        texts.insert(text);
    }
    // The random logits do drive different outputs.
    assert!(texts.len() > 4, "{texts:?}");
}

#[test]
fn prompt_tokens_passed_to_accept_are_not_fed_to_the_grammar() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    // The prompt "c c" is accepted before the first apply: the grammar still starts fresh.
    g.accept(4);
    g.accept(4);
    let hist = history(&[4, 4], &[]);
    let mut c = Candidates::from_logits(&[0.0; 7]);
    let cx = Context {
        history: &hist,
        prompt_len: 2,
        vocab: None,
        step: 0,
    };
    g.apply(&mut c, &cx).unwrap();
    assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), [0, 2]);
    // The chosen "ab" is accepted after the first apply: it advances the parser.
    g.accept(2);
    assert_eq!(g.constraint().consumed(), [2]);
}

#[test]
fn the_parser_follows_the_generated_history() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    assert_eq!(allowed(&mut g, 7, &[]), [0, 2]);
    // Tokens the host did not pass to accept are read from the history.
    assert_eq!(allowed(&mut g, 7, &[0, 1]), [0, 2, 6]);
    assert_eq!(g.constraint().consumed(), [0, 1]);
    // The same tokens also accepted: read once.
    g.accept(2);
    assert_eq!(allowed(&mut g, 7, &[0, 1, 2]), [0, 2, 6]);
    assert_eq!(g.constraint().consumed(), [0, 1, 2]);
    // A history that went another way restarts the parser.
    assert_eq!(allowed(&mut g, 7, &[2, 0]), [1, 3]);
    assert_eq!(g.constraint().consumed(), [2, 0]);
}

#[test]
fn reset_returns_to_the_prompt_phase() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    allowed(&mut g, 7, &[]);
    g.accept(2);
    g.reset();
    assert!(g.constraint().consumed().is_empty());
    // After a reset, accepted tokens are prompt again.
    g.accept(4);
    assert!(g.constraint().consumed().is_empty());
    assert_eq!(allowed(&mut g, 7, &[]), [0, 2]);
}

#[test]
fn an_accepted_token_the_grammar_refuses_is_reported_at_the_next_apply() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    allowed(&mut g, 7, &[]);
    g.accept(0);
    g.accept(4); // "c" after "a"
    let e = apply_error(&mut g, 7, &[0, 4]);
    assert!(
        e.contains("token 4 (\"c\") is not allowed by the grammar after 1 generated token (text so far: \"a\")"),
        "{e}"
    );
    // The parser is still usable at the last good position once the history is right.
    assert_eq!(allowed(&mut g, 7, &[0]), [1, 3]);
}

#[test]
fn a_refused_token_in_the_history_names_the_position() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    let e = apply_error(&mut g, 7, &[2, 0, 0]);
    assert!(
        e.contains("token 0 (\"a\") is not allowed by the grammar after 2 generated tokens (text so far: \"aba\")"),
        "{e}"
    );
    // EOS where the grammar cannot end.
    let e = apply_error(&mut g, 7, &[0, 6]);
    assert!(e.contains("token 6 (end-of-sequence)"), "{e}");
}

#[test]
fn a_grammar_that_admits_no_token_is_an_error_naming_the_position() {
    // "aé": no token spells "é".
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("aé"), &v);
    assert_eq!(allowed(&mut g, 7, &[]), [0]);
    let e = apply_error(&mut g, 7, &[0]);
    assert!(
        e.contains("the grammar admits no token of the vocabulary after 1 generated token (text so far: \"a\")"),
        "{e}"
    );
    assert!(!e.contains("NoExtensionBias"), "{e}");
    // The stage is still usable: the same position fails again, the start does not.
    assert!(apply_error(&mut g, 7, &[0]).contains("after 1 generated token"));
    assert_eq!(allowed(&mut g, 7, &[]), [0]);
    // At the very start.
    let mut g = stage(&regex("é"), &v);
    let e = apply_error(&mut g, 7, &[]);
    assert!(
        e.contains("admits no token of the vocabulary at the start of the output"),
        "{e}"
    );
}

#[test]
fn a_complete_grammar_without_an_eos_token_says_so() {
    let v = vocab(&["a", "b"], &[]);
    let mut g = stage(&regex("ab"), &v);
    assert_eq!(allowed(&mut g, 2, &[0]), [1]);
    let e = apply_error(&mut g, 2, &[0, 1]);
    assert!(e.contains("after 2 generated tokens"), "{e}");
    assert!(
        e.contains("the vocabulary has no end-of-sequence token"),
        "{e}"
    );
}

#[test]
fn sparse_candidates_are_filtered_in_place_and_an_empty_result_is_an_error() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    // top_k(3) of logits 0..6 keeps ids 6, 5, 4 … not what the grammar allows at the start.
    let logits = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut c = Candidates::from_logits(&logits);
    TopK::new(5).apply(&mut c, &Context::default()).unwrap();
    g.apply(&mut c, &Context::default()).unwrap();
    // Of 6 5 4 3 2, the grammar keeps "ab" (2).
    assert_eq!(c.iter().collect::<Vec<_>>(), [(2, 2.0)]);
    let mut g = stage(&regex("(ab)+"), &v);
    let mut c = Candidates::from_logits(&logits);
    TopK::new(3).apply(&mut c, &Context::default()).unwrap();
    let e = g
        .apply(&mut c, &Context::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no candidate the grammar allows is left at the start of the output: the grammar allows 2 tokens"), "{e}");
    assert!(e.contains("put `grammar` first"), "{e}");
}

#[test]
fn logits_of_surviving_candidates_are_kept_with_a_pending_scale() {
    let v = vocab(&SMALL, &[6]);
    let mut g = stage(&regex("(ab)+"), &v);
    let mut c = Candidates::from_logits(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    c.scale_logits(0.5);
    g.apply(&mut c, &Context::default()).unwrap();
    assert_eq!(c.iter().collect::<Vec<_>>(), [(0, 0.5), (2, 1.5)]);
}

fn create(args: [&str; 4], v: Option<&Vocab>) -> Result<Grammar, Error> {
    let [json_schema, regex, lark, file] = args.map(String::from);
    let p = GrammarParams {
        json_schema,
        regex,
        lark,
        file,
    };
    let cx = BuildContext { seed: 0, vocab: v };
    <Grammar as Stage>::new(p, &cx)
}

fn create_error(args: [&str; 4], v: Option<&Vocab>) -> (String, String) {
    match create(args, v) {
        Ok(_) => panic!("{args:?} built"),
        Err(Error::InvalidArgument { param, message, .. }) => (param, message),
        Err(e) => ("".into(), e.to_string()),
    }
}

#[test]
fn exactly_one_source_must_be_given() {
    let v = vocab(&SMALL, &[6]);
    let (param, msg) = create_error(["", "", "", ""], Some(&v));
    assert_eq!(param, "");
    assert!(
        msg.contains(
            "no grammar given; give exactly one of json_schema=…, regex=…, lark=…, file=…"
        ),
        "{msg}"
    );
    let (param, msg) = create_error(["{}", "a+", "", ""], Some(&v));
    assert_eq!(param, "regex");
    assert!(msg.starts_with("`json_schema` is given too"), "{msg}");
    let (param, _) = create_error(["", "a", "start: \"a\"", "x.lark"], Some(&v));
    assert_eq!(param, "lark");
}

#[test]
fn grammar_mistakes_name_the_argument() {
    let v = vocab(&SMALL, &[6]);
    let (param, msg) = create_error(["{\"type\": ", "", "", ""], Some(&v));
    assert_eq!(param, "json_schema");
    assert!(msg.contains("not valid JSON"), "{msg}");
    let (param, msg) = create_error(["{\"type\": \"frobnicate\"}", "", "", ""], Some(&v));
    assert_eq!(param, "json_schema");
    assert!(msg.contains("the grammar does not compile"), "{msg}");
    let (param, msg) = create_error(["", "(ab", "", ""], Some(&v));
    assert_eq!(param, "regex");
    assert!(msg.contains("the grammar does not compile"), "{msg}");
    let (param, msg) = create_error(["", "", "start: undefined_rule", ""], Some(&v));
    assert_eq!(param, "lark");
    assert!(msg.contains("the grammar does not compile"), "{msg}");
}

#[test]
fn grammar_files_are_read_by_extension() {
    let dir = std::env::temp_dir().join(format!("sieve-grammar-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("s.json");
    std::fs::write(&json, r#"{"enum": ["ab"]}"#).unwrap();
    let lark = dir.join("g.LARK");
    std::fs::write(&lark, "start: \"ab\" \"c\"\n").unwrap();
    let txt = dir.join("g.txt");
    std::fs::write(&txt, "ab").unwrap();
    let v = vocab(&["\"", "a", "b", "c", "ab", "<eos>"], &[5]);

    let mut g = create(["", "", "", json.to_str().unwrap()], Some(&v)).unwrap();
    assert_eq!(allowed(&mut g, 6, &[]), [0]);
    let mut g = create(["", "", "", lark.to_str().unwrap()], Some(&v)).unwrap();
    assert_eq!(allowed(&mut g, 6, &[]), [1, 4]);

    let (param, msg) = create_error(["", "", "", txt.to_str().unwrap()], Some(&v));
    assert_eq!(param, "file");
    assert!(msg.contains("unknown grammar file type; accepted extensions: .json (a JSON schema) or .lark (a Lark grammar)"), "{msg}");
    let missing = dir.join("missing.json");
    let (param, msg) = create_error(["", "", "", missing.to_str().unwrap()], Some(&v));
    assert_eq!(param, "file");
    assert!(msg.contains("cannot read"), "{msg}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_a_vocabulary_building_fails_after_checking_the_grammar() {
    let (param, msg) = create_error(["", "a+", "", ""], None);
    assert_eq!(param, "");
    assert!(msg.contains("needs the model's vocabulary"), "{msg}");
    // A broken grammar is reported first.
    let (param, msg) = create_error(["", "(a", "", ""], None);
    assert_eq!(param, "regex");
    assert!(msg.contains("the grammar does not compile"), "{msg}");
}

#[test]
fn vocabularies_llguidance_cannot_index_are_errors() {
    let e = Grammar::new(&regex("a"), "regex", &vocab(&[], &[]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("the vocabulary has 0 tokens"), "{e}");
    let e = Grammar::new(&regex("a"), "regex", &vocab(&["a"], &[3]))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("EOS token 3 is outside the vocabulary of 1 tokens"),
        "{e}"
    );
}

#[test]
fn empty_and_overlong_tokens_are_never_allowed() {
    let long = "a".repeat(env::MAX_TOKEN_BYTES + 1);
    let v = vocab(&["a", "", &long, "<eos>"], &[3]);
    let mut g = stage(&regex("a*"), &v);
    assert_eq!(allowed(&mut g, 4, &[]), [0, 3]);
}

#[test]
fn eos_is_accepted_where_the_mask_allowed_it() {
    let v = vocab(&SMALL, &[6]);
    // "ab" is complete (only EOS can follow) and "(ab)+" may end or go on: both accept EOS,
    // and the mask after it is EOS alone.
    for rx in ["ab", "(ab)+"] {
        let mut g = stage(&regex(rx), &v);
        assert!(allowed(&mut g, 7, &[2]).contains(&6));
        g.accept(6);
        assert_eq!(g.constraint().consumed(), [2, 6], "{rx}");
        assert_eq!(allowed(&mut g, 7, &[2, 6]), [6], "{rx}");
    }
}

/// `{"$ref": "#/$defs/r0", "$defs": {…}}` with definition `r{i}` made by `step(i + 1)`
/// (which refers to the next one), and the last one a plain integer.
fn schema_chain(n: usize, step: impl Fn(usize) -> String) -> String {
    let mut defs: Vec<String> = (0..n)
        .map(|i| format!("\"r{i}\": {}", step(i + 1)))
        .collect();
    defs.push(format!("\"r{n}\": {{\"type\": \"integer\"}}"));
    format!(
        "{{\"$ref\": \"#/$defs/r0\", \"$defs\": {{{}}}}}",
        defs.join(", ")
    )
}

/// The four schema shapes that overflowed a 2 MiB stack in llguidance's compiler, each `n`
/// references long: a bare `$ref` chain, nested object properties, `allOf` and `anyOf`.
fn deep_schemas(n: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "$ref",
            schema_chain(n, |j| format!("{{\"$ref\": \"#/$defs/r{j}\"}}")),
        ),
        (
            "properties",
            schema_chain(n, |j| {
                format!(
                    "{{\"type\": \"object\", \"properties\": {{\"a\": {{\"$ref\": \"#/$defs/r{j}\"}}}}}}"
                )
            }),
        ),
        (
            "allOf",
            schema_chain(n, |j| {
                format!("{{\"allOf\": [{{\"$ref\": \"#/$defs/r{j}\"}}]}}")
            }),
        ),
        (
            "anyOf",
            schema_chain(n, |j| {
                format!("{{\"anyOf\": [{{\"$ref\": \"#/$defs/r{j}\"}}, {{\"type\": \"null\"}}]}}")
            }),
        ),
    ]
}

/// `start: r0`, `r0: r1`, …: `n` chained Lark rules.
fn lark_chain(n: usize) -> String {
    let mut g = String::from("start: r0\n");
    for i in 0..n {
        g += &format!("r{i}: r{}\n", i + 1);
    }
    g + &format!("r{n}: \"x\"\n")
}

/// Builds the stage for `args` on a thread with a 256 KiB stack, as small as any caller's:
/// the compilation must not depend on the caller's stack.
fn create_on_small_stack(args: [String; 4]) -> Result<Grammar, Error> {
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let v = vocab(&["{", "}", "a", "x", "1", "null", "</s>"], &[6]);
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            create([a[0], a[1], a[2], a[3]], Some(&v))
        })
        .unwrap()
        .join()
        .unwrap()
}

fn schema_args(schema: String) -> [String; 4] {
    [schema, String::new(), String::new(), String::new()]
}

fn lark_args(grammar: String) -> [String; 4] {
    [String::new(), String::new(), grammar, String::new()]
}

#[test]
fn grammars_that_overflowed_the_compiler_now_compile_on_its_own_stack() {
    // The repros of the server crash, from a caller with a small stack: 300 references in
    // each shape (which overflowed a 2 MiB stack for all but the bare chain), the 24 KB chain
    // of 700 bare references, and 700 chained Lark rules.
    for (shape, schema) in deep_schemas(300) {
        let built = create_on_small_stack(schema_args(schema));
        assert!(built.is_ok(), "{shape}: {:?}", built.err());
    }
    let (_, chain) = &deep_schemas(700)[0];
    assert!(create_on_small_stack(schema_args(chain.clone())).is_ok());
    assert!(create_on_small_stack(lark_args(lark_chain(700))).is_ok());
}

#[test]
fn grammars_at_the_depth_bounds_compile_without_overflowing() {
    // Each shape as deep as the bounds let through (three objects and arrays a step for the
    // nested shapes, one for the bare chain; two for the root and `$defs`), in this
    // unoptimized build, where the compiler's frames are largest.
    let nested = (depth::MAX_SCHEMA_DEPTH - 3) / 3;
    for (shape, schema) in deep_schemas(nested) {
        let source = Source::JsonSchema(serde_json::from_str(&schema).unwrap());
        assert!(
            depth::schema_depth(match &source {
                Source::JsonSchema(s) => s,
                _ => unreachable!(),
            }) <= depth::MAX_SCHEMA_DEPTH
        );
        let built = create_on_small_stack(schema_args(schema));
        assert!(built.is_ok(), "{shape}: {:?}", built.err());
    }
    let bare = &deep_schemas(depth::MAX_SCHEMA_DEPTH - 3)[0].1;
    assert!(create_on_small_stack(schema_args(bare.clone())).is_ok());
    let rules = lark_chain(depth::MAX_LARK_DEPTH - 2);
    assert_eq!(depth::lark_depth(&rules), depth::MAX_LARK_DEPTH);
    assert!(create_on_small_stack(lark_args(rules)).is_ok());
}

#[test]
fn grammars_past_the_depth_bounds_are_refused_before_compiling() {
    for (shape, schema) in deep_schemas(depth::MAX_SCHEMA_DEPTH) {
        let e = create_on_small_stack(schema_args(schema)).err().unwrap();
        let m = e.to_string();
        assert!(
            m.contains("json_schema") && m.contains("levels deep"),
            "{shape}: {m}"
        );
        assert!(
            m.contains(&format!("at most {}", depth::MAX_SCHEMA_DEPTH)),
            "{m}"
        );
    }
    let e = create_on_small_stack(lark_args(lark_chain(3000)))
        .err()
        .unwrap();
    let m = e.to_string();
    assert!(m.contains("lark") && m.contains("3002 levels deep"), "{m}");
    // A Lark grammar hiding a deep schema behind `%json` (the schema's depth counts in the
    // grammar's).
    let (_, schema) = &deep_schemas(depth::MAX_LARK_DEPTH)[0];
    let hidden = format!("start: r0\nr0: %json {schema}\n");
    let e = create_on_small_stack(lark_args(hidden)).err().unwrap();
    assert!(e.to_string().contains("levels deep"), "{e}");
}

#[test]
fn grammar_text_past_the_length_bound_is_refused_unparsed() {
    let long = format!("\"{}\"", "a".repeat(depth::MAX_GRAMMAR_BYTES));
    let e = create_on_small_stack(schema_args(long)).err().unwrap();
    assert!(e.to_string().contains("bytes long"), "{e}");
    let dir = std::env::temp_dir().join(format!("sieve-grammar-long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("long.lark");
    std::fs::write(
        &path,
        format!("start: \"{}\"", "a".repeat(depth::MAX_GRAMMAR_BYTES)),
    )
    .unwrap();
    let file = path.to_str().unwrap().to_string();
    let e = create_on_small_stack([String::new(), String::new(), String::new(), file])
        .err()
        .unwrap();
    assert!(e.to_string().contains("longer than"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_grammar_built_again_is_a_fresh_copy_of_the_kept_one() {
    let v = vocab(&SMALL, &[6]);
    let source = regex("(ab|ba)c{0,3}");
    let key = cache::Key::new(&source, &v);
    let mut first = stage(&source, &v);
    assert!(cache::get(&key).is_some(), "the compiled grammar is kept");
    // The first stage advances; a second one, copied from the kept parser, starts afresh.
    assert_eq!(allowed(&mut first, 7, &[]), [0, 1, 2, 3, 5]);
    assert_eq!(allowed(&mut first, 7, &[2]), [4, 6]);
    let mut second = stage(&source, &v);
    assert_eq!(allowed(&mut second, 7, &[]), [0, 1, 2, 3, 5]);
    // Another vocabulary (one EOS id more) is another key.
    let other = vocab(&SMALL, &[5, 6]);
    assert_ne!(cache::Key::new(&source, &other), key);
    assert_ne!(cache::Key::new(&regex("(ab|ba)c{0,2}"), &v), key);
}
