//! `grammar(json_schema | regex | lark | file)`: a token mask that keeps the generated text
//! inside a grammar, on [llguidance](https://github.com/guidance-ai/llguidance); a sieve
//! plugin.
//!
//! # What it does
//! On every step the stage asks llguidance which tokens of the vocabulary keep the generated
//! text a prefix of some word of the grammar, and **removes every other candidate** (they do
//! not become `-inf`: they are gone, so later stages work on the allowed tokens only). EOS
//! tokens survive only where the grammar may end; once the grammar is complete, only EOS
//! survives. The chosen token advances the parser (`accept`).
//!
//! # The grammar (exactly one of)
//! - `json_schema`: a JSON schema, as JSON text (llguidance's JSON-schema support:
//!   Draft 2020-12 keywords, properties in schema order, flexible whitespace unless the schema
//!   says `"x-guidance": {"whitespace_flexible": false}`);
//! - `regex`: a regular expression the whole output must match (no anchors needed);
//! - `lark`: a grammar in llguidance's Lark dialect;
//! - `file`: a file holding a JSON schema (`.json`) or a Lark grammar (`.lark`).
//!
//! An empty string means "not given" (the parameters' default). None or several given, a
//! schema that is not JSON, a grammar llguidance does not compile, an unreadable file or
//! another extension are errors of the argument at fault. Grammars are checked even without a
//! vocabulary, so `sieve check` reports their mistakes.
//!
//! # The vocabulary
//! The stage needs the model's vocabulary (every token's bytes and the EOS ids) from the
//! host: without one (`sieve apply`, `sieve check`) building it is an error. See [`mod@env`] for
//! how the vocabulary becomes llguidance's token trie (EOS tokens are marked special; other
//! tokens count as their text).
//!
//! # The prompt
//! Only the generated text is constrained; prompt tokens are never fed to the grammar, even
//! though hosts pass them to `accept`. See [`constraint`] for how the stage tells them apart
//! (tokens accepted before the first `apply` are prompt) and keeps the parser in step with
//! the history of the step context.
//!
//! # Errors while running
//! - a state where the grammar admits no token of the vocabulary (a grammar needing a
//!   character no token spells, or a complete grammar and no EOS token), naming the position:
//!   the number of generated tokens and the end of the text so far;
//! - a token the grammar refuses in the history or passed to `accept` (a stage after the mask
//!   chose it, or the host fed one), naming the token and the position;
//! - no allowed token left among the candidates (earlier stages removed them all: put
//!   `grammar` first, as vLLM applies its grammar bitmask before every other processor);
//! - llguidance failing to compute a mask (one of its parser limits), with its reason.
//!
//! After an error the stage stays usable: its parser is rebuilt at the last good position.
//!
//! # Reference
//! `reference/semantics.md` §7: a per-step bitmask over the vocabulary of the tokens that keep
//! the output a valid prefix, EOS only in accepting states, the parser advanced with the
//! chosen token. Unlike llama.cpp's default (sample first, check, resample only on a
//! rejection) and mistral.rs (the same), the mask is always applied: the result does not
//! depend on whether the unmasked pipeline would have picked a valid token.

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Sampler, Stage, Vocab};
use toktrie::SimpleVob;

pub mod cache;
pub mod constraint;
pub mod depth;
pub mod env;
pub mod source;

use constraint::Constraint;
use source::{invalid, Source};

/// The `grammar` stage.
pub struct Grammar {
    constraint: Constraint,
    /// Scratch: the allowed candidates' ids and logits.
    ids: Vec<u32>,
    logits: Vec<f32>,
}

/// The parameters of `grammar`: an empty string is a source not given.
#[derive(Debug, Params)]
pub struct GrammarParams {
    /// a JSON schema, as JSON text
    #[param(default = "")]
    pub json_schema: String,
    /// a regular expression the whole output matches
    #[param(default = "")]
    pub regex: String,
    /// a grammar in llguidance's Lark dialect
    #[param(default = "")]
    pub lark: String,
    /// a grammar file: .json (a JSON schema) or .lark
    #[param(default = "")]
    pub file: String,
}

fn failed(message: String) -> Error {
    Error::Stage {
        stage: "grammar".into(),
        message,
    }
}

/// A parser for `source` from `factory`; `param` names the argument in errors.
///
/// The grammar's depth is checked first ([`depth::check_depth`]), then llguidance compiles it
/// on a thread with [`depth::COMPILE_STACK_BYTES`] of stack, so no grammar can overflow the
/// caller's stack (a server's worker, a command's main thread).
///
/// # Errors
/// [`Error::InvalidArgument`] on `param` for a grammar too deep or one llguidance does not
/// compile; [`Error::Stage`] when the thread cannot be started.
pub fn compile(factory: &ParserFactory, source: &Source, param: &str) -> Result<Matcher, Error> {
    depth::check_depth(param, source)?;
    let grammar = source.to_grammar();
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("sieve-grammar-compile".into())
            .stack_size(depth::COMPILE_STACK_BYTES)
            .spawn_scoped(scope, || compile_here(factory, grammar, param))
            .map_err(|e| {
                failed(format!(
                    "cannot start the thread that compiles the grammar: {e}"
                ))
            })?
            .join()
            .unwrap_or_else(|_| Err(failed("llguidance panicked compiling the grammar".into())))
    })
}

/// Compiles `grammar` on the calling thread.
fn compile_here(
    factory: &ParserFactory,
    grammar: TopLevelGrammar,
    param: &str,
) -> Result<Matcher, Error> {
    let parser = factory.create_parser(grammar).map_err(|e| {
        invalid(
            param,
            format!("the grammar does not compile: {}", e.to_string().trim_end()),
        )
    })?;
    let matcher = Matcher::new(Ok(parser));
    match matcher.get_error() {
        Some(e) => Err(invalid(
            param,
            format!("the grammar does not compile: {}", e.trim_end()),
        )),
        None => Ok(matcher),
    }
}

impl Grammar {
    /// The stage for `source` over `vocab`; `param` names the argument that gave the source.
    /// A grammar compiled lately over the same vocabulary is copied, not compiled again (see
    /// [`cache`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on `param` when the grammar does not compile;
    /// [`Error::Stage`] for a vocabulary llguidance cannot use.
    pub fn new(source: &Source, param: &str, vocab: &Vocab) -> Result<Self, Error> {
        let key = cache::Key::new(source, vocab);
        let compiled = match cache::get(&key) {
            Some(compiled) => compiled,
            None => {
                let env = env::tok_env(vocab)?;
                let factory = env::factory(&env)?;
                let matcher = compile(&factory, source, param)?;
                let compiled = cache::Compiled { env, matcher };
                cache::put(key, compiled.clone());
                compiled
            }
        };
        Ok(Grammar {
            constraint: Constraint::new(compiled.matcher, compiled.env),
            ids: Vec::new(),
            logits: Vec::new(),
        })
    }

    /// The grammar's state (for tests and tools).
    pub fn constraint(&self) -> &Constraint {
        &self.constraint
    }

    /// Keeps the candidates `mask` allows, in their order.
    fn keep_allowed(&mut self, candidates: &mut Candidates, mask: &SimpleVob) -> Result<(), Error> {
        let allowed = |id: u32| (id as usize) < mask.len() && mask.is_allowed(id);
        if !candidates.is_dense() {
            candidates.retain(|id, _| allowed(id));
            return Ok(());
        }
        // Dense: walk the mask 32 tokens (one word) at a time, copying whole runs of allowed
        // tokens, and load the survivors as sparse candidates.
        let vocab_size = candidates.vocab_size();
        let logits = candidates.logits();
        self.ids.clear();
        self.logits.clear();
        for (w, &word) in mask.as_slice().iter().enumerate() {
            let base = w * 32;
            if word == 0 || base >= logits.len() {
                continue;
            }
            if word == u32::MAX && base + 32 <= logits.len() {
                self.ids.extend(base as u32..base as u32 + 32);
                self.logits.extend_from_slice(&logits[base..base + 32]);
                continue;
            }
            let mut bits = word;
            while bits != 0 {
                let i = base + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if i < logits.len() {
                    self.ids.push(i as u32);
                    self.logits.push(logits[i]);
                }
            }
        }
        candidates.load_sparse(&self.ids, &self.logits, vocab_size)
    }
}

impl Sampler for Grammar {
    fn apply(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
        let mask = self.constraint.mask(cx.generated())?;
        self.keep_allowed(candidates, &mask)?;
        if !candidates.has_finite() {
            return Err(failed(format!(
                "no candidate the grammar allows is left {}: the grammar allows {} tokens, and \
                 the stages before `grammar` removed or masked every one of them; put \
                 `grammar` first",
                self.constraint.position(),
                mask.num_set()
            )));
        }
        Ok(())
    }

    fn accept(&mut self, token: u32) {
        self.constraint.accept(token);
    }

    fn reset(&mut self) {
        self.constraint.reset();
    }
}

impl Stage for Grammar {
    type Params = GrammarParams;
    const NAME: &'static str = "grammar";
    const DOC: &'static str =
        "keep only tokens that keep the output inside a grammar: a JSON schema, a regex, a Lark grammar or a file (llguidance)";

    fn new(p: GrammarParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        let (source, param) = Source::from_args(&p.json_schema, &p.regex, &p.lark, &p.file)?;
        match cx.vocab {
            Some(vocab) => Grammar::new(&source, param, vocab),
            None => {
                // Report a grammar's own mistakes first, as `sieve check` runs without a
                // vocabulary.
                compile(&env::byte_factory()?, &source, param)?;
                Err(failed(
                    "needs the model's vocabulary (every token's bytes and the EOS ids), and \
                     none is loaded, as in `sieve apply` and `sieve check`; use it where a \
                     model is loaded (`sieve generate --model …`)"
                        .into(),
                ))
            }
        }
    }
}

sieve_plugin::export_plugin!(
    name = "grammar",
    version = env!("CARGO_PKG_VERSION"),
    stages = [Grammar]
);

#[cfg(test)]
mod tests;
