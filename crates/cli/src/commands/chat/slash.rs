//! The commands typed inside a chat: a line starting with `/` (a message that must start with
//! `/` is typed with two, `//`, and sent with one).

use std::path::PathBuf;

/// The help `/help` prints.
pub const HELP: &str = "\
Commands:
  /sampler PIPELINE   use this pipeline from the next reply on (/sampler alone shows it)
  /trace              the last reply's first token, stage by stage
  /seed N             the seed of the random stages from the next reply on
  /system TEXT        set the system message (/system alone removes it)
  /undo               drop the last exchange
  /save FILE.json     write the conversation in OpenAI's message format
  /stats              the last reply's numbers and the conversation's size
  /help               this list
  /quit               leave (as does Ctrl-D)
Ctrl-C stops a reply (what was written stays in the conversation).
A message that starts with / is typed with //.
";

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/sampler [PIPELINE]`: show or replace the pipeline.
    Sampler(Option<String>),
    /// `/trace`.
    Trace,
    /// `/seed N` (the text as typed, checked when run).
    Seed(String),
    /// `/system [TEXT]`.
    System(Option<String>),
    /// `/undo`.
    Undo,
    /// `/save FILE`.
    Save(Option<PathBuf>),
    /// `/stats`.
    Stats,
    /// `/help`.
    Help,
    /// `/quit` or `/exit`.
    Quit,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// What a typed line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A message to the model.
    Message(String),
    /// A command.
    Command(Slash),
    /// Nothing (blank).
    Empty,
}

/// Reads a typed line.
pub fn parse(line: &str) -> Line {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return Line::Empty;
    }
    if let Some(message) = line.strip_prefix("//") {
        return Line::Message(format!("/{message}"));
    }
    let Some(command) = line.strip_prefix('/') else {
        return Line::Message(line.to_string());
    };
    let (name, rest) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command, ""),
    };
    let arg = (!rest.is_empty()).then(|| rest.to_string());
    Line::Command(match name {
        "sampler" => Slash::Sampler(arg),
        "trace" => Slash::Trace,
        "seed" => Slash::Seed(rest.to_string()),
        "system" => Slash::System(arg),
        "undo" => Slash::Undo,
        "save" => Slash::Save(arg.map(PathBuf::from)),
        "stats" => Slash::Stats,
        "help" | "?" => Slash::Help,
        "quit" | "exit" | "q" => Slash::Quit,
        _ => Slash::Unknown(name.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_messages_commands_or_nothing() {
        assert_eq!(parse("Hello\n"), Line::Message("Hello".into()));
        assert_eq!(parse("  \n"), Line::Empty);
        assert_eq!(parse("//etc/hosts"), Line::Message("/etc/hosts".into()));
        assert_eq!(
            parse("/sampler  top_k(2) | greedy "),
            Line::Command(Slash::Sampler(Some("top_k(2) | greedy".into())))
        );
        assert_eq!(parse("/sampler"), Line::Command(Slash::Sampler(None)));
        assert_eq!(parse("/seed 7"), Line::Command(Slash::Seed("7".into())));
        assert_eq!(parse("/system"), Line::Command(Slash::System(None)));
        assert_eq!(
            parse("/save out.json"),
            Line::Command(Slash::Save(Some("out.json".into())))
        );
        assert_eq!(parse("/exit"), Line::Command(Slash::Quit));
        assert_eq!(
            parse("/smapler x"),
            Line::Command(Slash::Unknown("smapler".into()))
        );
    }
}
