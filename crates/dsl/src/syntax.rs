//! Text to [`ast::Stage`]s: the pest grammar, the pre-scan, and literal decoding.

use alloc::string::ToString;
use alloc::vec::Vec;

use pest::iterators::Pair;
use pest::Parser;
use sieve_core::Value;

use crate::ast;
use crate::diagnostic::{empty_pipeline, Diagnostic, DiagnosticKind};
use crate::grammar::{Grammar, Rule, WHITESPACE};
use crate::literal;
use crate::scan::{scan, MAX_NESTING};
use crate::span::Span;

/// Parses `source` into stages (names and values checked for form, not against a registry).
pub(crate) fn parse(source: &str) -> Result<Vec<ast::Stage>, Diagnostic> {
    if source.trim_matches(WHITESPACE).is_empty() {
        return Err(empty_pipeline(source));
    }
    let scanned = scan(source);
    if let Some(span) = scanned.too_deep {
        return Err(Diagnostic::new(
            DiagnosticKind::TooDeep,
            alloc::format!("brackets nested more than {MAX_NESTING} levels deep"),
            span,
            source,
        )
        .with_help("values may nest lists and maps, but not this deeply"));
    }
    let pipeline = match Grammar::parse(Rule::pipeline, source) {
        Ok(mut pairs) => pairs.next(),
        Err(e) => {
            return Err(crate::syntax_error::translate(
                &e,
                source,
                scanned.unterminated,
            ))
        }
    };
    let mut stages = Vec::new();
    for pair in pipeline.into_iter().flat_map(Pair::into_inner) {
        if pair.as_rule() == Rule::stage {
            stages.push(stage(pair, source)?);
        }
    }
    Ok(stages)
}

fn stage(pair: Pair<'_, Rule>, source: &str) -> Result<ast::Stage, Diagnostic> {
    // pest's span of a stage without parentheses takes in the whitespace after the name: end
    // the span at its last token instead.
    let mut span = Span::point(pair.as_span().start());
    let mut name = None;
    let mut args = Vec::new();
    for part in pair.into_inner() {
        span.end = span.end.max(part.as_span().end());
        match part.as_rule() {
            Rule::stage_name => {
                name = Some((part.as_str().to_string(), Span::from(part.as_span())))
            }
            Rule::arg => args.push(arg(part, source)?),
            _ => {}
        }
    }
    let (name, name_span) = name.unwrap_or_default();
    Ok(ast::Stage {
        name,
        name_span,
        span,
        args,
    })
}

fn arg(pair: Pair<'_, Rule>, source: &str) -> Result<ast::Arg, Diagnostic> {
    let span = Span::from(pair.as_span());
    let mut name = None;
    let mut found = None;
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::param_name => {
                name = Some((part.as_str().to_string(), Span::from(part.as_span())))
            }
            Rule::equals => {}
            _ => found = Some((Span::from(part.as_span()), value(part, source)?)),
        }
    }
    let (value_span, value) = found.unwrap_or((span, Value::Bool(false)));
    Ok(ast::Arg {
        name,
        value,
        value_span,
        span,
    })
}

/// A value node. Recursion depth is bounded by the pre-scan's nesting limit.
fn value(pair: Pair<'_, Rule>, source: &str) -> Result<Value, Diagnostic> {
    let span = Span::from(pair.as_span());
    match pair.as_rule() {
        Rule::number => literal::number(pair.as_str(), span, source),
        Rule::string => literal::string(pair.as_str(), span.start, source).map(Value::Str),
        Rule::boolean => Ok(Value::Bool(pair.as_str() == "true")),
        Rule::list => {
            let items = pair.into_inner().filter(|p| is_value(p.as_rule()));
            items
                .map(|p| value(p, source))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::List)
        }
        Rule::map => {
            let mut entries = Vec::new();
            for entry in pair.into_inner().filter(|p| p.as_rule() == Rule::entry) {
                let mut parts = entry.into_inner().filter(|p| is_value(p.as_rule()));
                if let (Some(k), Some(v)) = (parts.next(), parts.next()) {
                    let key_span = Span::from(k.as_span());
                    let key = value(k, source)?;
                    if !matches!(key, Value::Int(_) | Value::Str(_)) {
                        return Err(Diagnostic::new(
                            DiagnosticKind::InvalidLiteral,
                            alloc::format!(
                                "map keys must be integers or strings, found {}",
                                key.type_name()
                            ),
                            key_span,
                            source,
                        )
                        .with_help("write a token id (`13`) or a token's text (`\"Hello\"`)"));
                    }
                    entries.push((key, value(v, source)?));
                }
            }
            Ok(Value::Map(entries))
        }
        _ => Err(Diagnostic::new(
            DiagnosticKind::Syntax,
            "expected a value",
            span,
            source,
        )),
    }
}

fn is_value(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::number | Rule::string | Rule::boolean | Rule::list | Rule::map
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn stages_and_arguments_carry_their_spans() {
        let src = "top_k(40) |\n top_p( min_keep = 2, p=0.5 ,) | greedy ";
        let stages = parse(src).unwrap();
        assert_eq!(stages.len(), 3);
        let at = |span: Span| &src[span.start..span.end];
        assert_eq!(at(stages[0].span), "top_k(40)");
        assert_eq!(at(stages[0].args[0].span), "40");
        assert_eq!(stages[0].args[0].name, None);
        assert_eq!(at(stages[1].span), "top_p( min_keep = 2, p=0.5 ,)");
        assert_eq!(at(stages[1].args[0].span), "min_keep = 2");
        assert_eq!(at(stages[1].args[0].value_span), "2");
        assert_eq!(at(stages[1].args[0].name.as_ref().unwrap().1), "min_keep");
        assert_eq!(stages[1].args[1].value, Value::Float(0.5));
        assert_eq!(at(stages[2].span), "greedy");
        assert_eq!(at(stages[2].name_span), "greedy");
    }

    #[test]
    fn values_of_every_kind() {
        let stages = parse(r#"x([1, "a", [true]], {13: -inf, 'Hi': 2.5,}, [], {})"#).unwrap();
        let values: Vec<Value> = stages[0].args.iter().map(|a| a.value.clone()).collect();
        assert_eq!(
            values,
            vec![
                Value::List(vec![
                    Value::Int(1),
                    Value::Str("a".into()),
                    Value::List(vec![Value::Bool(true)])
                ]),
                Value::Map(vec![
                    (Value::Int(13), Value::Float(f64::NEG_INFINITY)),
                    (Value::Str("Hi".into()), Value::Float(2.5)),
                ]),
                Value::List(vec![]),
                Value::Map(vec![]),
            ]
        );
    }

    #[test]
    fn keywords_need_a_word_boundary() {
        // `information` is a parameter name, not `inf`; `true_p` too.
        let stages = parse("x(information=1, true_p=2, inf=inf)").unwrap();
        let names: Vec<&str> = stages[0]
            .args
            .iter()
            .map(|a| a.name.as_ref().unwrap().0.as_str())
            .collect();
        assert_eq!(names, ["information", "true_p", "inf"]);
    }
}
