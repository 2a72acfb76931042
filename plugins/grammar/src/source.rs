//! Where the grammar comes from: exactly one of `json_schema`, `regex`, `lark` or `file`, read
//! into an llguidance [`TopLevelGrammar`].

use std::path::Path;

use llguidance::api::TopLevelGrammar;

use sieve_plugin::Error;

/// The parameters that name a grammar, in the order the stage declares them.
pub const SOURCES: [&str; 4] = ["json_schema", "regex", "lark", "file"];

/// The longest grammar text accepted, in bytes (a schema, a regex, a Lark grammar or a file).
pub const MAX_GRAMMAR_BYTES: usize = 1 << 20;

/// The file extensions `file=` accepts, with what each holds.
pub const EXTENSIONS: &str = ".json (a JSON schema) or .lark (a Lark grammar)";

/// A grammar, as the user gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A JSON schema (Draft 2020-12, as llguidance reads it).
    JsonSchema(serde_json::Value),
    /// A regular expression the whole output must match.
    Regex(String),
    /// A Lark grammar (llguidance's dialect).
    Lark(String),
}

/// An [`Error::InvalidArgument`] of the `grammar` stage.
pub fn invalid(param: &str, message: impl Into<String>) -> Error {
    Error::InvalidArgument {
        stage: "grammar".into(),
        param: param.into(),
        message: message.into(),
    }
}

impl Source {
    /// The grammar named by the arguments, where an empty string means "not given".
    ///
    /// # Errors
    /// [`Error::Stage`] when no source is given; [`Error::InvalidArgument`]: several sources
    /// given (naming the second one, so the diagnostic points at it), a schema that is not JSON, a file that cannot
    /// be read or has another extension than `.json` / `.lark`.
    pub fn from_args(
        json_schema: &str,
        regex: &str,
        lark: &str,
        file: &str,
    ) -> Result<(Self, &'static str), Error> {
        let given: Vec<(&'static str, &str)> = SOURCES
            .into_iter()
            .zip([json_schema, regex, lark, file])
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let one_of = "give exactly one of json_schema=…, regex=…, lark=…, file=…";
        let (param, text) = match given.as_slice() {
            [] => {
                return Err(Error::Stage {
                    stage: "grammar".into(),
                    message: format!("no grammar given; {one_of}"),
                })
            }
            [one] => *one,
            [first, second, ..] => {
                return Err(invalid(
                    second.0,
                    format!("`{}` is given too; {one_of}", first.0),
                ))
            }
        };
        if param != "file" {
            check_length(param, text)?;
        }
        let source = match param {
            "json_schema" => Source::json(param, text)?,
            "regex" => Source::Regex(text.to_string()),
            "lark" => Source::Lark(text.to_string()),
            _ => Source::read_file(text)?,
        };
        Ok((source, param))
    }

    /// A JSON schema from its text.
    fn json(param: &str, text: &str) -> Result<Self, Error> {
        serde_json::from_str(text)
            .map(Source::JsonSchema)
            .map_err(|e| invalid(param, format!("the JSON schema is not valid JSON: {e}")))
    }

    /// The grammar in file `path`, its kind by extension.
    fn read_file(path: &str) -> Result<Self, Error> {
        let ext = Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let kind = match ext.as_deref() {
            Some("json") => "json",
            Some("lark") => "lark",
            _ => {
                return Err(invalid(
                    "file",
                    format!(
                        "`{path}`: unknown grammar file type; accepted extensions: {EXTENSIONS}"
                    ),
                ))
            }
        };
        let text = read_bounded(path)?;
        if kind == "json" {
            Source::json("file", &text)
        } else {
            Ok(Source::Lark(text))
        }
    }

    /// The llguidance grammar.
    ///
    /// Compile it through [`crate::compile`], which checks its depth and gives it a stack of
    /// its own; llguidance's compiler recurses as deep as the grammar nests.
    pub fn to_grammar(&self) -> TopLevelGrammar {
        match self {
            Source::JsonSchema(schema) => TopLevelGrammar::from_json_schema(schema.clone()),
            Source::Regex(rx) => TopLevelGrammar::from_regex(rx),
            Source::Lark(text) => TopLevelGrammar::from_lark(text.clone()),
        }
    }
}

/// The text of grammar file `path`, refused past [`MAX_GRAMMAR_BYTES`] without reading more
/// than one byte beyond the limit.
fn read_bounded(path: &str) -> Result<String, Error> {
    use std::io::Read;
    let cannot = |e: std::io::Error| invalid("file", format!("cannot read `{path}`: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_GRAMMAR_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() > MAX_GRAMMAR_BYTES {
        return Err(invalid(
            "file",
            format!("`{path}` is longer than {MAX_GRAMMAR_BYTES} bytes, the most accepted"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| invalid("file", format!("`{path}` is not UTF-8: {e}")))
}

/// Refuses a grammar text longer than [`MAX_GRAMMAR_BYTES`] before it is parsed; `param`
/// names the argument in the error.
///
/// # Errors
/// [`Error::InvalidArgument`] on `param`, giving the length and the limit.
pub fn check_length(param: &str, text: &str) -> Result<(), Error> {
    if text.len() > MAX_GRAMMAR_BYTES {
        return Err(invalid(
            param,
            format!(
                "the grammar is {} bytes long; at most {MAX_GRAMMAR_BYTES} are accepted",
                text.len()
            ),
        ));
    }
    Ok(())
}
