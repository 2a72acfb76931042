//! `sieve samplers`: every registered stage with its parameters, as text or JSON.
//!
//! # JSON schema (`--json`)
//! An array with one object per stage, sorted by name:
//! ```text
//! [{"name": "top_p", "doc": "…", "selector": false, "origin": "built-in", "plugin": null,
//!   "params": [{"name": "p", "type": "float", "required": false, "default": 0.9,
//!               "range": {"min": 0.0, "max": 1.0, "min_inclusive": true, "max_inclusive": true},
//!               "doc": "…"}]}]
//! ```
//! - `plugin` is `null` for a built-in stage, and for a plugin's stage the library that
//!   defined it: `{"name": "dry", "version": "0.1.0", "file": "…/libsieve_dry.so"}` (name and
//!   version as its `export_plugin!` line gives them; `origin` is the same file);
//! - `type` is one of `float`, `int`, `bool`, `string`, `list`, `map`;
//! - `default` is `null` exactly when `required` is true; a map default is an array of
//!   `[key, value]` pairs (JSON object keys can only be strings);
//! - `range` is `null` for parameters without one; an `int` parameter's finite bounds are
//!   integers;
//! - JSON has no infinity or NaN: such numbers are written as the strings `"inf"`, `"-inf"`,
//!   `"nan"`.

use std::fmt::Write as _;

use clap::Args;
use serde::Serialize;
use serde_json::Value as Json;
use sieve_core::{ParamKind, ParamSpec, Range, Registry, StageInfo, Value};

use crate::plugins::PluginArgs;

/// `sieve samplers`.
#[derive(Debug, Args)]
pub struct SamplersArgs {
    /// Print a JSON array instead of the listing
    #[arg(long)]
    pub json: bool,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Runs the command: the listing of every stage of `registry`, as text or JSON.
pub fn run(args: &SamplersArgs, registry: &Registry) -> String {
    if args.json {
        json(registry)
    } else {
        text(registry)
    }
}

/// Every stage of `registry` as an aligned text listing: per stage a title line (name, whether
/// it selects, origin), its doc, and one line per parameter (name, type, default or
/// `required`, valid range, doc), columns aligned across the whole listing.
pub fn text(registry: &Registry) -> String {
    let stages: Vec<&StageInfo> = registry.iter().map(|e| &e.info).collect();
    let rows: Vec<Vec<[String; 4]>> = stages
        .iter()
        .map(|s| s.params.iter().map(param_columns).collect())
        .collect();
    let mut widths = [0usize; 4];
    for row in rows.iter().flatten() {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for (i, (stage, rows)) in stages.iter().zip(&rows).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let kind = if stage.selector { "selector, " } else { "" };
        match &stage.plugin {
            Some(p) => writeln!(
                out,
                "{}  ({kind}plugin {} {}, {})",
                stage.name, p.name, p.version, stage.origin
            ),
            None => writeln!(out, "{}  ({kind}{})", stage.name, stage.origin),
        }
        .expect("writing to a String cannot fail");
        if !stage.doc.is_empty() {
            let _ = writeln!(out, "    {}", stage.doc);
        }
        if rows.is_empty() {
            let _ = writeln!(out, "    (no parameters)");
        }
        for (row, param) in rows.iter().zip(&stage.params) {
            let mut line = String::from("    ");
            for (cell, w) in row.iter().zip(widths) {
                let pad = w - cell.chars().count();
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            }
            line.push_str(&param.doc);
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    out
}

/// Name, type, `default …` or `required`, `range …` (or `-`).
fn param_columns(p: &ParamSpec) -> [String; 4] {
    let default = p
        .default
        .as_ref()
        .map_or_else(|| "required".to_string(), |v| format!("default {v}"));
    let range = p.range.map_or_else(
        || "-".to_string(),
        |r| format!("range {}", range_text(&r, p.kind)),
    );
    [
        p.name.clone(),
        p.kind.short_name().to_string(),
        default,
        range,
    ]
}

/// A range as `[min, max]` / `(min, inf)`; integer parameters' bounds print as integers
/// (`i64::MAX` rather than its nearest `f64`, `9223372036854775808`).
fn range_text(r: &Range, kind: ParamKind) -> String {
    let bound = |x: f64| -> String {
        if x.is_infinite() {
            (if x > 0.0 { "inf" } else { "-inf" }).to_string()
        } else if kind == ParamKind::Int {
            // `as` saturates, so bounds at the ends of i64 print as i64::MIN / i64::MAX.
            (x as i64).to_string()
        } else {
            format!("{x}")
        }
    };
    let open = if r.min_inclusive { '[' } else { '(' };
    let close = if r.max_inclusive { ']' } else { ')' };
    format!("{open}{}, {}{close}", bound(r.min), bound(r.max))
}

/// Every stage of `registry` as the documented JSON array, indented, with a final newline.
pub fn json(registry: &Registry) -> String {
    let stages: Vec<StageJson<'_>> = registry.iter().map(|e| StageJson::of(&e.info)).collect();
    let mut text = serde_json::to_string_pretty(&stages).expect("JSON values always serialize");
    text.push('\n');
    text
}

/// One stage in `--json`, fields in the documented order.
#[derive(Serialize)]
struct StageJson<'a> {
    name: &'a str,
    doc: &'a str,
    selector: bool,
    origin: &'a str,
    plugin: Option<PluginJson<'a>>,
    params: Vec<ParamJson<'a>>,
}

/// The library of a plugin's stage in `--json`.
#[derive(Serialize)]
struct PluginJson<'a> {
    name: &'a str,
    version: &'a str,
    file: &'a str,
}

impl<'a> StageJson<'a> {
    fn of(s: &'a StageInfo) -> Self {
        StageJson {
            name: &s.name,
            doc: &s.doc,
            selector: s.selector,
            origin: &s.origin,
            plugin: s.plugin.as_ref().map(|p| PluginJson {
                name: &p.name,
                version: &p.version,
                file: &p.file,
            }),
            params: s.params.iter().map(ParamJson::of).collect(),
        }
    }
}

/// One parameter in `--json`.
#[derive(Serialize)]
struct ParamJson<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    required: bool,
    default: Json,
    range: Option<RangeJson>,
    doc: &'a str,
}

impl<'a> ParamJson<'a> {
    fn of(p: &'a ParamSpec) -> Self {
        ParamJson {
            name: &p.name,
            kind: p.kind.short_name(),
            required: p.default.is_none(),
            default: p.default.as_ref().map_or(Json::Null, value_json),
            range: p.range.as_ref().map(|r| RangeJson::of(r, p.kind)),
            doc: &p.doc,
        }
    }
}

/// A range in `--json`; an integer parameter's finite bounds are integers.
#[derive(Serialize)]
struct RangeJson {
    min: Json,
    max: Json,
    min_inclusive: bool,
    max_inclusive: bool,
}

impl RangeJson {
    fn of(r: &Range, kind: ParamKind) -> Self {
        let bound = |x: f64| {
            if kind == ParamKind::Int && x.is_finite() {
                Json::from(x as i64)
            } else {
                float_json(x)
            }
        };
        RangeJson {
            min: bound(r.min),
            max: bound(r.max),
            min_inclusive: r.min_inclusive,
            max_inclusive: r.max_inclusive,
        }
    }
}

/// A number, or `"inf"` / `"-inf"` / `"nan"` where JSON has no number.
fn float_json(x: f64) -> Json {
    match serde_json::Number::from_f64(x) {
        Some(n) => Json::Number(n),
        None if x.is_nan() => Json::from("nan"),
        None => Json::from(if x > 0.0 { "inf" } else { "-inf" }),
    }
}

/// A parameter value as JSON; maps become arrays of `[key, value]` pairs.
fn value_json(v: &Value) -> Json {
    match v {
        Value::Int(i) => Json::from(*i),
        Value::Float(x) => float_json(*x),
        Value::Bool(b) => Json::from(*b),
        Value::Str(s) => Json::from(s.as_str()),
        Value::List(items) => Json::Array(items.iter().map(value_json).collect()),
        Value::Map(entries) => Json::Array(
            entries
                .iter()
                .map(|(k, v)| Json::Array(vec![value_json(k), value_json(v)]))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sieve_core::StageEntry;

    fn registry() -> Registry {
        let mut r = Registry::new();
        let nothing = |args: &sieve_core::Args,
                       _: &sieve_core::BuildContext<'_>|
         -> Result<Box<dyn sieve_core::Sampler>, sieve_core::Error> {
            Err(args.invalid("x", "test stage"))
        };
        let cut = StageInfo::builtin(
            "cut",
            "keep what is above a bar",
            vec![
                ParamSpec::float("bar", 0.5, Range::closed(0.0, 1.0), "the bar"),
                ParamSpec::new("words", ParamKind::List, "words to keep"),
                ParamSpec::new("bias", ParamKind::Map, "per-token bias").with_default(Value::Map(
                    vec![(Value::Int(13), Value::Float(f64::NEG_INFINITY))],
                )),
            ],
        );
        r.register(StageEntry::new(cut, nothing)).unwrap();
        let pick = StageInfo::builtin("pick", "choose one", vec![ParamSpec::seed()]).selector();
        r.register(StageEntry::new(pick, nothing)).unwrap();
        let mut plugin = StageInfo::builtin("zz_plain", "", vec![]);
        plugin.origin = "libzz.so".into();
        plugin.plugin = Some(sieve_core::PluginOrigin {
            name: "zz".into(),
            version: "0.2.0".into(),
            file: "libzz.so".into(),
        });
        r.register(StageEntry::new(plugin, nothing)).unwrap();
        r
    }

    #[test]
    fn text_aligns_columns_across_stages() {
        let want = "\
cut  (built-in)
    keep what is above a bar
    bar    float  default 0.5         range [0, 1]                  the bar
    words  list   required            -                             words to keep
    bias   map    default {13: -inf}  -                             per-token bias

pick  (selector, built-in)
    choose one
    seed   int    default -1          range [-1, 9007199254740992]  random seed; -1 uses the run's --seed

zz_plain  (plugin zz 0.2.0, libzz.so)
    (no parameters)
";
        assert_eq!(text(&registry()), want);
    }

    #[test]
    fn json_writes_infinities_as_strings_and_maps_as_pairs() {
        let text = json(&registry());
        assert!(
            text.starts_with("[\n  {\n    \"name\": \"cut\",\n    \"doc\": "),
            "{text}"
        );
        let parsed: Json = serde_json::from_str(&text).unwrap();
        let cut = &parsed[0];
        assert_eq!(cut["name"], "cut");
        assert_eq!(cut["selector"], false);
        assert_eq!(cut["params"][0]["default"], 0.5);
        assert_eq!(
            cut["params"][0]["range"],
            json!({"min": 0.0, "max": 1.0, "min_inclusive": true, "max_inclusive": true})
        );
        assert_eq!(cut["params"][1]["required"], true);
        assert_eq!(cut["params"][1]["default"], Json::Null);
        assert_eq!(cut["params"][1]["range"], Json::Null);
        assert_eq!(cut["params"][2]["default"], json!([[13, "-inf"]]));
        assert_eq!(parsed[1]["selector"], true);
        assert_eq!(parsed[1]["params"][0]["range"]["min"], -1);
        assert_eq!(parsed[1]["params"][0]["range"]["max"], sieve_core::MAX_SEED);
        assert_eq!(parsed[2]["origin"], "libzz.so");
        assert_eq!(
            parsed[2]["plugin"],
            json!({"name": "zz", "version": "0.2.0", "file": "libzz.so"})
        );
        assert_eq!(parsed[0]["plugin"], Json::Null);
        assert_eq!(parsed[2]["params"], json!([]));
    }

    #[test]
    fn integer_ranges_print_as_integers() {
        assert_eq!(
            range_text(&Range::closed(-1.0, i64::MAX as f64), ParamKind::Int),
            "[-1, 9223372036854775807]"
        );
        assert_eq!(
            range_text(&Range::greater_than(0.0), ParamKind::Float),
            "(0, inf)"
        );
        assert_eq!(
            range_text(&Range::open(0.5, 1.0), ParamKind::Float),
            "(0.5, 1)"
        );
    }

    #[test]
    fn infinite_range_bounds_are_strings() {
        assert_eq!(
            RangeJson::of(&Range::at_least(1.0), ParamKind::Int).max,
            "inf"
        );
        assert_eq!(float_json(f64::NAN), "nan");
        assert_eq!(float_json(f64::NEG_INFINITY), "-inf");
    }
}
