//! Stage parameters: the values a pipeline passes, the schema a stage declares, and the
//! validated arguments a stage constructor receives.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

/// One argument value, as written in a pipeline (`40`, `0.9`, `-inf`, `"\n"`, `true`,
/// `[1, 2]`, `{13: -inf, "Hello": 2.5}`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer literal.
    Int(i64),
    /// A float literal, including `inf` and `-inf`.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A string literal (escapes already resolved).
    Str(String),
    /// `[a, b, …]`.
    List(Vec<Value>),
    /// `{key: value, …}`, in the order written.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The type name used in diagnostics (`integer`, `float`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Bool(_) => "a boolean",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
            Value::Map(_) => "a map",
        }
    }

    /// The value as a number, if it is one (integers convert exactly up to 2^53).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }
}

/// Formats a float so that parsing the text gives the same `f64` back, always with a `.`
/// or an exponent so it reads as a float (`1.0`, `0.05`, `1e-7`, `inf`, `-inf`).
fn write_float(f: &mut fmt::Formatter<'_>, x: f64) -> fmt::Result {
    if x.is_infinite() {
        return f.write_str(if x > 0.0 { "inf" } else { "-inf" });
    }
    let text = alloc::format!("{x:?}");
    f.write_str(&text)
}

fn write_str_literal(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for ch in s.chars() {
        match ch {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            '\0' => f.write_str("\\0")?,
            c if c.is_control() => write!(f, "\\u{{{:x}}}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// Prints the value in pipeline syntax; parsing the text gives the same value back.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write_float(f, *x),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => write_str_literal(f, s),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Value::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// The type a parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A number; integers are accepted and converted.
    Float,
    /// An integer.
    Int,
    /// A boolean.
    Bool,
    /// A string.
    Str,
    /// A list; the stage checks its elements.
    List,
    /// A map; the stage checks its keys and values.
    Map,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParamKind::Float => "a number",
            ParamKind::Int => "an integer",
            ParamKind::Bool => "a boolean",
            ParamKind::Str => "a string",
            ParamKind::List => "a list",
            ParamKind::Map => "a map",
        })
    }
}

impl ParamKind {
    /// Whether a value of this kind may be written as `value` (an integer is accepted for a
    /// float): the one table of which value types each kind takes.
    pub fn accepts(&self, value: &Value) -> bool {
        matches!(
            (self, value),
            (ParamKind::Float, Value::Int(_) | Value::Float(_))
                | (ParamKind::Int, Value::Int(_))
                | (ParamKind::Bool, Value::Bool(_))
                | (ParamKind::Str, Value::Str(_))
                | (ParamKind::List, Value::List(_))
                | (ParamKind::Map, Value::Map(_))
        )
    }
    /// Short name for listings (`float`, `int`, …).
    pub fn short_name(&self) -> &'static str {
        match self {
            ParamKind::Float => "float",
            ParamKind::Int => "int",
            ParamKind::Bool => "bool",
            ParamKind::Str => "string",
            ParamKind::List => "list",
            ParamKind::Map => "map",
        }
    }
}

/// The valid interval of a numeric parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Lower bound (may be `-inf`).
    pub min: f64,
    /// Upper bound (may be `inf`).
    pub max: f64,
    /// Whether `min` itself is allowed.
    pub min_inclusive: bool,
    /// Whether `max` itself is allowed.
    pub max_inclusive: bool,
}

impl Range {
    /// `[min, max]`.
    pub const fn closed(min: f64, max: f64) -> Self {
        Range {
            min,
            max,
            min_inclusive: true,
            max_inclusive: true,
        }
    }
    /// `[min, inf)`.
    pub const fn at_least(min: f64) -> Self {
        Range {
            min,
            max: f64::INFINITY,
            min_inclusive: true,
            max_inclusive: false,
        }
    }
    /// `(min, inf)`.
    pub const fn greater_than(min: f64) -> Self {
        Range {
            min,
            max: f64::INFINITY,
            min_inclusive: false,
            max_inclusive: false,
        }
    }
    /// `(min, max)`.
    pub const fn open(min: f64, max: f64) -> Self {
        Range {
            min,
            max,
            min_inclusive: false,
            max_inclusive: false,
        }
    }
    /// Whether `x` lies in the interval (NaN never does).
    pub fn contains(&self, x: f64) -> bool {
        let above = if self.min_inclusive {
            x >= self.min
        } else {
            x > self.min
        };
        let below = if self.max_inclusive {
            x <= self.max
        } else {
            x < self.max
        };
        above && below
    }
    /// Whether the integer `i` lies in the interval, compared exactly (through `f64`,
    /// 2^53 + 1 would round to 2^53 and pass a bound of 2^53).
    pub fn contains_int(&self, i: i64) -> bool {
        use core::cmp::Ordering::{Equal, Greater, Less};
        let above = match cmp_int_float(i, self.min) {
            Some(Greater) => true,
            Some(Equal) => self.min_inclusive,
            Some(Less) | None => false,
        };
        let below = match cmp_int_float(i, self.max) {
            Some(Less) => true,
            Some(Equal) => self.max_inclusive,
            Some(Greater) | None => false,
        };
        above && below
    }
}

/// Compares an integer with a float exactly (`None` when `x` is NaN).
fn cmp_int_float(i: i64, x: f64) -> Option<core::cmp::Ordering> {
    use core::cmp::Ordering::{Equal, Greater, Less};
    // 2^63: every i64 is below it; -2^63 is i64::MIN.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() {
        return None;
    }
    if x >= TWO_63 {
        return Some(Less);
    }
    if x < -TWO_63 {
        return Some(Greater);
    }
    // Here `floor(x)` is in [-2^63, 2^63) and the cast is exact.
    let floor = floor_exact(x);
    let whole = floor as i64;
    Some(match i.cmp(&whole) {
        Equal if x > floor => Less,
        other => other,
    })
}

/// `x.floor()` without `std` (the crate builds for `no_std`): exact for every finite `x`.
fn floor_exact(x: f64) -> f64 {
    // Every float of magnitude 2^52 or more is whole already.
    if x.abs() >= 4_503_599_627_370_496.0 {
        return x;
    }
    let t = x as i64 as f64; // truncates toward zero; exact here
    if t > x {
        t - 1.0
    } else {
        t
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let num = |x: f64| -> String {
            if x == f64::INFINITY {
                "inf".to_string()
            } else if x == f64::NEG_INFINITY {
                "-inf".to_string()
            } else {
                alloc::format!("{x}")
            }
        };
        write!(
            f,
            "{}{}, {}{}",
            if self.min_inclusive { '[' } else { '(' },
            num(self.min),
            num(self.max),
            if self.max_inclusive { ']' } else { ')' }
        )
    }
}

/// The largest seed a pipeline may name: 2^53.
pub const MAX_SEED: u64 = 1 << 53;

/// One parameter of a stage: its name, type, default, valid range and a one-line doc.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// The name used in `name=value`.
    pub name: String,
    /// The accepted type.
    pub kind: ParamKind,
    /// The default; `None` makes the parameter required.
    pub default: Option<Value>,
    /// Valid interval for numeric parameters.
    pub range: Option<Range>,
    /// One line for `sieve samplers`.
    pub doc: String,
}

impl ParamSpec {
    /// A parameter of `kind` with no default and no range.
    pub fn new(name: &str, kind: ParamKind, doc: &str) -> Self {
        ParamSpec {
            name: name.to_string(),
            kind,
            default: None,
            range: None,
            doc: doc.to_string(),
        }
    }
    /// A float parameter with a default and a range.
    pub fn float(name: &str, default: f64, range: Range, doc: &str) -> Self {
        ParamSpec::new(name, ParamKind::Float, doc)
            .with_default(Value::Float(default))
            .with_range(range)
    }
    /// An integer parameter with a default and a range.
    pub fn int(name: &str, default: i64, range: Range, doc: &str) -> Self {
        ParamSpec::new(name, ParamKind::Int, doc)
            .with_default(Value::Int(default))
            .with_range(range)
    }
    /// The `seed` parameter every random stage has: `-1` (the default) means the run's seed
    /// (`--seed`). Seeds go up to 2^53, the largest integer every JSON reader keeps exact.
    pub fn seed() -> Self {
        ParamSpec::int(
            "seed",
            -1,
            Range::closed(-1.0, MAX_SEED as f64),
            "random seed; -1 uses the run's --seed",
        )
    }
    /// Sets the default.
    pub fn with_default(mut self, default: Value) -> Self {
        self.default = Some(default);
        self
    }
    /// Sets the valid range.
    pub fn with_range(mut self, range: Range) -> Self {
        self.range = Some(range);
        self
    }

    /// Checks `value` against this parameter's type and range and returns it in canonical type
    /// (an integer given for a float parameter becomes a float).
    ///
    /// # Errors
    /// [`ParamError::WrongType`] or [`ParamError::OutOfRange`], without a location, for the
    /// caller to place.
    pub fn check(&self, value: &Value) -> Result<Value, ParamError> {
        if !self.kind.accepts(value) {
            return Err(ParamError::WrongType {
                param: self.name.clone(),
                expected: self.kind,
                found: value.type_name(),
            });
        }
        let converted = match (self.kind, value) {
            (ParamKind::Float, Value::Int(i)) => Value::Float(*i as f64),
            _ => value.clone(),
        };
        if let Some(range) = self.range {
            let inside = match converted {
                // Integers are compared exactly: through `f64`, 2^53 + 1 would pass a bound
                // of 2^53.
                Value::Int(i) => range.contains_int(i),
                Value::Float(x) => !x.is_nan() && range.contains(x),
                _ => true,
            };
            if !inside {
                return Err(ParamError::OutOfRange {
                    param: self.name.clone(),
                    value: converted,
                    range,
                });
            }
        }
        Ok(converted)
    }
}

/// Why [`ParamSpec::check`] refused a value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamError {
    /// The value has a type the parameter does not accept.
    WrongType {
        /// The parameter.
        param: String,
        /// The kind it accepts.
        expected: ParamKind,
        /// What was given (a type name from [`Value::type_name`]).
        found: &'static str,
    },
    /// A number outside the parameter's range (or NaN).
    OutOfRange {
        /// The parameter.
        param: String,
        /// The value, in canonical type.
        value: Value,
        /// The valid range.
        range: Range,
    },
}

impl ParamError {
    /// The parameter the error is about.
    pub fn param(&self) -> &str {
        match self {
            ParamError::WrongType { param, .. } | ParamError::OutOfRange { param, .. } => param,
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::WrongType {
                param,
                expected,
                found,
            } => write!(f, "`{param}` must be {expected}, found {found}"),
            ParamError::OutOfRange {
                param,
                value,
                range,
            } => write!(
                f,
                "`{param}` = {value} is out of range; valid range is {range}"
            ),
        }
    }
}

impl core::error::Error for ParamError {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn floats_print_so_they_parse_back() {
        assert_eq!(Value::Float(1.0).to_string(), "1.0");
        assert_eq!(Value::Float(0.05).to_string(), "0.05");
        assert_eq!(Value::Float(1e-7).to_string(), "1e-7");
        assert_eq!(Value::Float(f64::NEG_INFINITY).to_string(), "-inf");
        assert_eq!(Value::Str("a\"\n".into()).to_string(), "\"a\\\"\\n\"");
        let map = Value::Map(vec![(Value::Int(13), Value::Float(-2.5))]);
        assert_eq!(map.to_string(), "{13: -2.5}");
    }

    #[test]
    fn check_converts_ints_and_reports_ranges() {
        let p = ParamSpec::float("p", 0.9, Range::closed(0.0, 1.0), "mass");
        assert_eq!(p.check(&Value::Int(1)), Ok(Value::Float(1.0)));
        let err = p.check(&Value::Float(1.5)).unwrap_err();
        assert!(matches!(err, ParamError::OutOfRange { .. }));
        assert_eq!(
            err.to_string(),
            "`p` = 1.5 is out of range; valid range is [0, 1]"
        );
        let err = p.check(&Value::Str("x".into())).unwrap_err();
        assert!(matches!(err, ParamError::WrongType { .. }));
        assert_eq!(err.to_string(), "`p` must be a number, found a string");
        let k = ParamSpec::int("k", 40, Range::at_least(0.0), "count");
        assert!(k.check(&Value::Float(1.0)).is_err());
        assert!(p.check(&Value::Float(f64::NAN)).is_err());
    }

    #[test]
    fn integers_are_range_checked_exactly() {
        let seed = ParamSpec::seed();
        assert!(seed.check(&Value::Int(1 << 53)).is_ok());
        assert!(seed.check(&Value::Int((1 << 53) + 1)).is_err());
        assert!(seed.check(&Value::Int(i64::MAX)).is_err());
        assert!(seed.check(&Value::Int(-1)).is_ok());
        assert!(seed.check(&Value::Int(-2)).is_err());
        let r = Range::open(-0.5, 2.5);
        let inside: Vec<i64> = (-3..5).filter(|&i| r.contains_int(i)).collect();
        assert_eq!(inside, vec![0, 1, 2]);
        assert!(Range::at_least(0.0).contains_int(i64::MAX));
        assert!(Range::greater_than(f64::NEG_INFINITY).contains_int(i64::MIN));
        assert!(!Range::closed(9.3e18, f64::INFINITY).contains_int(i64::MAX));
        assert!(Range::closed(-9.3e18, 0.0).contains_int(i64::MIN));
        assert!(!Range::closed(f64::NAN, 1.0).contains_int(0));
        let k = ParamSpec::int("k", 40, Range::closed(0.0, u32::MAX as f64), "count");
        assert!(k.check(&Value::Int(u32::MAX as i64)).is_ok());
        assert!(k.check(&Value::Int(u32::MAX as i64 + 1)).is_err());
    }
}
