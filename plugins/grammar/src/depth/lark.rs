//! How deep llguidance may recurse compiling a Lark grammar: the heaviest path through its
//! definitions, each leading to the rules and tokens it names, plus the deepest JSON schema
//! embedded with `%json`.
//!
//! The scan reads only what the measure needs, with llguidance's lexical rules: comments (`#`
//! or `//` to the end of the line), strings (`"…"`, with backslash escapes), regular
//! expressions (`/…/flags`), special tokens (`<…>`), grammar references (`@name`), and the
//! JSON values after `%json`, `%regex` and `%llguidance`. A name that starts a line and is
//! followed by `:` (after an optional `.priority`) starts a definition; every other name
//! belongs to the definition above it. Rules nested in `%lark { … }` count as definitions of
//! the same grammar, which can only overstate the depth.

use std::collections::HashMap;

use serde_json::Value;

use super::graph::heaviest_path;
use super::schema::schema_depth;

/// The depth of `grammar`: the heaviest path through its definitions (each weighing 1), plus
/// the deepest JSON schema any `%json` in it holds (as [`schema_depth`] measures it).
pub fn lark_depth(grammar: &str) -> usize {
    let scan = Scan::of(grammar);
    let mut number: HashMap<&str, usize> = HashMap::new();
    for (name, _) in &scan.definitions {
        let next = number.len();
        number.entry(name).or_insert(next);
    }
    let mut edges = vec![Vec::new(); number.len()];
    for (name, uses) in &scan.definitions {
        let from = number[name];
        edges[from].extend(uses.iter().filter_map(|u| number.get(u).copied()));
    }
    heaviest_path(&edges, &vec![1; number.len()]).saturating_add(scan.deepest_json)
}

/// The definitions of a grammar, each with the names it uses, and its deepest `%json`.
struct Scan<'a> {
    definitions: Vec<(&'a str, Vec<&'a str>)>,
    deepest_json: usize,
}

impl<'a> Scan<'a> {
    fn of(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let mut scan = Scan {
            definitions: Vec::new(),
            deepest_json: 0,
        };
        // Uses before the first definition (directives such as `%import`) belong to none.
        let mut uses: Vec<&'a str> = Vec::new();
        let mut at_line_start = true;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'\n' => {
                    at_line_start = true;
                    i += 1;
                    continue;
                }
                b' ' | b'\t' | b'\r' => {
                    i += 1;
                    continue;
                }
                b'#' => i = line_end(bytes, i),
                b'/' if bytes.get(i + 1) == Some(&b'/') => i = line_end(bytes, i),
                b'"' => i = quoted_end(bytes, i, b'"'),
                b'/' => i = quoted_end(bytes, i, b'/'),
                b'<' => i = special_end(bytes, i),
                b'@' => i = name_end(bytes, i + 1),
                b'%' => {
                    let word_end = name_end(bytes, i + 1);
                    let word = &text[i + 1..word_end];
                    i = word_end;
                    if matches!(word, "json" | "regex" | "llguidance") {
                        let (value, end) = json_prefix(text, i);
                        if word == "json" {
                            if let Some(schema) = value {
                                scan.deepest_json = scan.deepest_json.max(schema_depth(&schema));
                            }
                        }
                        i = end;
                    }
                }
                _ if is_name_start(b) => {
                    let end = name_end(bytes, i);
                    let name = &text[i..end];
                    i = end;
                    if at_line_start && defines(bytes, end) {
                        let finished = std::mem::take(&mut uses);
                        if let Some(last) = scan.definitions.last_mut() {
                            last.1.extend(finished);
                        }
                        scan.definitions.push((name, Vec::new()));
                    } else {
                        uses.push(name);
                    }
                }
                _ => i += 1,
            }
            // `?` and `!` may prefix a rule's name at the start of a line.
            at_line_start = at_line_start && matches!(b, b'?' | b'!');
        }
        if let Some(last) = scan.definitions.last_mut() {
            last.1.extend(uses);
        }
        scan
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// Where the name starting at `i` ends (letters, digits, `_` and `-`, as llguidance's lexer).
fn name_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'-')) {
        i += 1;
    }
    i
}

/// Whether a name ending at `i` is being defined: `:` follows (not `::`), after an optional
/// `.priority`.
fn defines(bytes: &[u8], mut i: usize) -> bool {
    let skip_blank = |mut i: usize| {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        i
    };
    i = skip_blank(i);
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i = skip_blank(i);
    }
    bytes.get(i) == Some(&b':') && bytes.get(i + 1) != Some(&b':')
}

fn line_end(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| i + p)
}

/// Past the closing `quote` of the literal opening at `i` (backslash escapes; a literal never
/// spans lines).
fn quoted_end(bytes: &[u8], i: usize, quote: u8) -> usize {
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            b if b == quote => return j + 1,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// Past a special token `<…>` opening at `i` (or just past `<` when it is not one).
fn special_end(bytes: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < bytes.len() && !bytes[j].is_ascii_whitespace() && !matches!(bytes[j], b'<' | b'>') {
        j += 1;
    }
    if bytes.get(j) == Some(&b'>') {
        j + 1
    } else {
        i + 1
    }
}

/// The JSON value starting at `i` (after blanks) and where it ends; `None` and the end of the
/// line when there is none (llguidance then refuses the grammar).
fn json_prefix(text: &str, i: usize) -> (Option<Value>, usize) {
    let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => (Some(value), i + stream.byte_offset()),
        _ => (None, line_end(text.as_bytes(), i)),
    }
}

#[cfg(test)]
mod tests {
    use super::lark_depth;

    fn chain(n: usize, name: impl Fn(usize) -> String) -> String {
        let mut g = format!("start: {}\n", name(0));
        for i in 0..n {
            g += &format!("{}: {}\n", name(i), name(i + 1));
        }
        g + &format!("{}: \"x\"\n", name(n))
    }

    #[test]
    fn a_chain_of_rules_or_tokens_is_as_deep_as_it_is_long() {
        assert_eq!(lark_depth(&chain(700, |i| format!("r{i}"))), 702);
        assert_eq!(lark_depth(&chain(10, |i| format!("T{i}"))), 12);
        assert_eq!(lark_depth("start: \"a\" | \"b\""), 1);
    }

    #[test]
    fn names_in_literals_and_comments_are_not_uses() {
        let g = "start: a \"b c\" /d e/i <f> @g // h\n# i\na: \"x\"\nb: c\nc: \"y\"\n";
        // start -> a only; b -> c is a separate chain of two.
        assert_eq!(lark_depth(g), 2);
    }

    #[test]
    fn continuation_lines_priorities_and_prefixes_belong_to_their_rule() {
        let g = "?start.2: a\n    | b\n!a: \"x\"\nb : c\nc.-1: \"y\"\n";
        assert_eq!(lark_depth(g), 3);
    }

    #[test]
    fn embedded_json_schemas_add_their_depth() {
        let g = "start: %json {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}\n";
        assert_eq!(lark_depth(g), 1 + 3);
        // A %json that is not JSON adds nothing (llguidance refuses it).
        assert_eq!(lark_depth("start: %json {oops\n"), 1);
    }

    #[test]
    fn mutual_recursion_weighs_the_whole_cycle() {
        let g = "start: expr\nexpr: term \"+\" expr | term\nterm: atom \"*\" term | atom\natom: \"(\" expr \")\" | NUM\nNUM: /[0-9]+/\n";
        // start, then {expr, term, atom} as one cycle, then NUM.
        assert_eq!(lark_depth(g), 1 + 3 + 1);
    }
}
