//! serde deserialization of stage arguments: `&Value` and `&Args` are serde
//! [`Deserializer`]s, so a stage (built-in or plugin) can read its validated arguments into a
//! `#[derive(Deserialize)]` struct.
//!
//! - [`Args`] reads as a map from parameter name to value (a struct with one field per
//!   parameter); an error inside a value names the parameter ([`DeError::param`]).
//! - `Int` reads as `i64` (and so into any integer type it fits, or a float), `Float` as `f64`
//!   (`±inf` included, exactly), `Bool`, `Str` (borrowed), `List` as a sequence, `Map` as a map
//!   whose keys are values too (`{13: -inf}` reads into a `BTreeMap<u32, f32>`).
//! - `Option<T>` reads a present value as `Some`; a missing field is `None` as usual.
//! - Enums read from a string (unit variants: `"mean"`) or a one-entry map
//!   (`{"scale": 2.0}` for a newtype variant).
//! - Untagged enums and `deserialize_any` work (every value knows its type).
//! - `()` or a unit struct reads from empty [`Args`] (a stage without parameters).

use alloc::format;
use alloc::string::{String, ToString};
use core::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::Deserialize;

use crate::{Args, Error, Value};

/// Why arguments could not be read into the requested type.
#[derive(Debug, Clone, PartialEq)]
pub struct DeError {
    param: Option<String>,
    message: String,
}

impl DeError {
    /// The parameter whose value was at fault, when known.
    pub fn param(&self) -> Option<&str> {
        self.param.as_deref()
    }
    /// What went wrong, with the path inside the value (`element 2: …`).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The same error inside `part` of a value (an element, a map key or value).
    fn within(mut self, part: fmt::Arguments<'_>) -> Self {
        self.message = format!("{part}: {}", self.message);
        self
    }
    /// The same error, about parameter `param` (kept if already set deeper).
    fn about(mut self, param: &str) -> Self {
        if self.param.is_none() {
            self.param = Some(param.to_string());
        }
        self
    }
    /// As a [`crate::Error`] of stage `stage`: [`Error::InvalidArgument`] when the parameter
    /// is known, else [`Error::Stage`].
    pub fn into_error(self, stage: &str) -> Error {
        match self.param {
            Some(param) => Error::InvalidArgument {
                stage: stage.to_string(),
                param,
                message: self.message,
            },
            None => Error::Stage {
                stage: stage.to_string(),
                message: format!("reading the arguments: {}", self.message),
            },
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.param {
            Some(p) => write!(f, "argument `{p}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl de::StdError for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            param: None,
            message: msg.to_string(),
        }
    }
}

/// Reads the validated arguments of a stage into `T`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the parameter whose value does not fit `T` (or
/// [`Error::Stage`] when no single parameter is at fault, such as a missing field).
pub fn from_args<'de, T: Deserialize<'de>>(args: &'de Args) -> Result<T, Error> {
    T::deserialize(args).map_err(|e| e.into_error(args.stage()))
}

/// Reads one value into `T`.
///
/// # Errors
/// [`DeError`] saying where in the value it does not fit `T`.
pub fn from_value<'de, T: Deserialize<'de>>(value: &'de Value) -> Result<T, DeError> {
    T::deserialize(value)
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Int(i) => de::Unexpected::Signed(*i),
        Value::Float(x) => de::Unexpected::Float(*x),
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Str(s) => de::Unexpected::Str(s),
        Value::List(_) => de::Unexpected::Seq,
        Value::Map(_) => de::Unexpected::Map,
    }
}

impl<'de> Deserializer<'de> for &'de Value {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self {
            Value::Int(i) => visitor.visit_i64(*i),
            Value::Float(x) => visitor.visit_f64(*x),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::List(items) => visitor.visit_seq(Seq {
                items: items.iter(),
                index: 0,
            }),
            Value::Map(entries) => visitor.visit_map(Map {
                entries: entries.iter(),
                index: 0,
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self {
            Value::Str(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Map(entries) if entries.len() == 1 => visitor.visit_enum(Enum {
                variant: &entries[0].0,
                value: &entries[0].1,
            }),
            other => Err(de::Error::invalid_type(
                unexpected(other),
                &"a string (unit variant) or a one-entry map (variant with data)",
            )),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The elements of a list.
struct Seq<'de> {
    items: core::slice::Iter<'de, Value>,
    index: usize,
}

impl<'de> SeqAccess<'de> for Seq<'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(item)
            .map(Some)
            .map_err(|e| e.within(format_args!("element {index}")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of a map.
struct Map<'de> {
    entries: core::slice::Iter<'de, (Value, Value)>,
    index: usize,
    value: Option<&'de Value>,
}

impl<'de> MapAccess<'de> for Map<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        self.index += 1;
        seed.deserialize(key)
            .map(Some)
            .map_err(|e| e.within(format_args!("key {key}")))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let value = self
            .value
            .take()
            .ok_or_else(|| <DeError as de::Error>::custom("a map value was read before its key"))?;
        let index = self.index.saturating_sub(1);
        seed.deserialize(value)
            .map_err(|e| e.within(format_args!("the value of entry {index}")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A variant given as a one-entry map `{variant: value}`.
struct Enum<'de> {
    variant: &'de Value,
    value: &'de Value,
}

impl<'de> EnumAccess<'de> for Enum<'de> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let v = seed.deserialize(self.variant)?;
        Ok((v, self))
    }
}

impl<'de> VariantAccess<'de> for Enum<'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        Err(de::Error::invalid_type(
            unexpected(self.value),
            &"a unit variant, written as a string",
        ))
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(self.value)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        self.value.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.value.deserialize_map(visitor)
    }
}

impl<'de> Deserializer<'de> for &'de Args {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_map(ArgsMap {
            values: self.values().iter(),
            current: None,
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    /// `()` (a stage without parameters) reads from empty arguments.
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.values().is_empty() {
            visitor.visit_unit()
        } else {
            self.deserialize_any(visitor)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The `(name, value)` pairs of [`Args`] as a map.
struct ArgsMap<'de> {
    values: core::slice::Iter<'de, (String, Value)>,
    current: Option<&'de (String, Value)>,
}

impl<'de> MapAccess<'de> for ArgsMap<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(pair) = self.values.next() else {
            return Ok(None);
        };
        self.current = Some(pair);
        let name: &'de str = &pair.0;
        seed.deserialize(name.into_deserializer())
            .map(Some)
            .map_err(|e: DeError| e.about(name))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (name, value) = self.current.take().ok_or_else(|| {
            <DeError as de::Error>::custom("an argument was read before its name")
        })?;
        seed.deserialize(value).map_err(|e| e.about(name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.values.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use alloc::vec;
    use alloc::vec::Vec;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(untagged)]
    enum Breaker {
        Text(String),
        Ids(Vec<u32>),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Mean,
        Scale(f64),
        Window { start: u32, end: u32 },
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Params<'a> {
        multiplier: f64,
        low: f32,
        last_n: i32,
        count: usize,
        on: bool,
        label: &'a str,
        breakers: Vec<Breaker>,
        biases: BTreeMap<u32, f32>,
        mode: Mode,
        maybe: Option<u8>,
        #[serde(default)]
        absent: Option<u8>,
    }

    fn args() -> Args {
        Args::new(
            "demo",
            vec![
                ("multiplier".into(), Value::Float(f64::INFINITY)),
                ("low".into(), Value::Float(f64::NEG_INFINITY)),
                ("last_n".into(), Value::Int(-1)),
                ("count".into(), Value::Int(7)),
                ("on".into(), Value::Bool(true)),
                ("label".into(), Value::Str("x\0y".into())),
                (
                    "breakers".into(),
                    Value::List(vec![
                        Value::Str("\n".into()),
                        Value::List(vec![Value::Int(13), Value::Int(25)]),
                    ]),
                ),
                (
                    "biases".into(),
                    Value::Map(vec![(Value::Int(13), Value::Float(f64::NEG_INFINITY))]),
                ),
                ("mode".into(), Value::Str("mean".into())),
                ("maybe".into(), Value::Int(3)),
            ],
        )
    }

    #[test]
    fn a_derived_struct_reads_every_kind_exactly() {
        let args = args();
        let p: Params<'_> = from_args(&args).unwrap();
        assert_eq!(p.multiplier, f64::INFINITY);
        assert_eq!(p.low, f32::NEG_INFINITY);
        assert_eq!((p.last_n, p.count, p.on, p.label), (-1, 7, true, "x\0y"));
        assert_eq!(
            p.breakers,
            vec![Breaker::Text("\n".into()), Breaker::Ids(vec![13, 25])]
        );
        assert_eq!(p.biases.get(&13), Some(&f32::NEG_INFINITY));
        assert_eq!(p.mode, Mode::Mean);
        assert_eq!((p.maybe, p.absent), (Some(3), None));
    }

    #[test]
    fn enum_variants_with_data_read_from_one_entry_maps() {
        let scale = Value::Map(vec![(Value::Str("scale".into()), Value::Float(2.0))]);
        assert_eq!(from_value::<Mode>(&scale), Ok(Mode::Scale(2.0)));
        let window = Value::Map(vec![(
            Value::Str("window".into()),
            Value::Map(vec![
                (Value::Str("start".into()), Value::Int(1)),
                (Value::Str("end".into()), Value::Int(4)),
            ]),
        )]);
        assert_eq!(
            from_value::<Mode>(&window),
            Ok(Mode::Window { start: 1, end: 4 })
        );
        let err = from_value::<Mode>(&Value::Str("median".into())).unwrap_err();
        assert!(err.message().contains("unknown variant `median`"), "{err}");
        assert!(from_value::<Mode>(&Value::Int(1)).is_err());
    }

    #[test]
    fn errors_name_the_parameter_and_the_place_inside_it() {
        let args = Args::new(
            "demo",
            vec![(
                "breakers".into(),
                Value::List(vec![Value::Int(1), Value::List(vec![Value::Int(-4)])]),
            )],
        );
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct P {
            breakers: Vec<Vec<u32>>,
        }
        let err = P::deserialize(&args).unwrap_err();
        assert_eq!(err.param(), Some("breakers"));
        assert!(
            err.message()
                .starts_with("element 0: invalid type: integer `1`"),
            "{err}"
        );
        let args = Args::new(
            "demo",
            vec![(
                "breakers".into(),
                Value::List(vec![Value::List(vec![Value::Int(-4)])]),
            )],
        );
        let err = from_args::<P>(&args).unwrap_err();
        assert_eq!(
            err,
            Error::InvalidArgument {
                stage: "demo".into(),
                param: "breakers".into(),
                message: "element 0: element 0: invalid value: integer `-4`, expected u32".into()
            }
        );
    }

    #[test]
    fn a_missing_field_is_a_stage_error() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct P {
            n: f64,
        }
        let err = from_args::<P>(&Args::new("demo", vec![])).unwrap_err();
        assert_eq!(
            err,
            Error::Stage {
                stage: "demo".into(),
                message: "reading the arguments: missing field `n`".into()
            }
        );
    }

    #[test]
    fn no_parameters_read_as_unit() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct None_;
        let empty = Args::new("demo", vec![]);
        assert_eq!(from_args::<()>(&empty), Ok(()));
        assert_eq!(from_args::<None_>(&empty), Ok(None_));
        assert!(from_args::<()>(&args()).is_err());
    }

    #[test]
    fn integers_convert_only_where_they_fit() {
        assert_eq!(from_value::<u8>(&Value::Int(255)), Ok(255));
        assert!(from_value::<u8>(&Value::Int(256)).is_err());
        assert_eq!(from_value::<f64>(&Value::Int(3)), Ok(3.0));
        assert!(from_value::<i64>(&Value::Float(3.0)).is_err());
        assert_eq!(from_value::<char>(&Value::Str("é".into())), Ok('é'));
        assert_eq!(
            from_value::<String>(&Value::Str("a".into())),
            Ok("a".into())
        );
        assert!(from_value::<bool>(&Value::Int(1)).is_err());
    }
}
