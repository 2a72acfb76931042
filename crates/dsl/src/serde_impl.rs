//! serde for [`PipelineSpec`]: serialized as its canonical text; read back, from that text or
//! from a list of stage objects, as a [`PipelineSource`] validated against a registry the
//! caller gives ([`PipelineSource::resolve`], [`SpecSeed`]).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Serialize, Serializer};
use sieve_core::{Registry, Value};

use crate::ast;
use crate::diagnostic::{empty_pipeline, Diagnostic, HelpSuffix};
use crate::span::Span;
use crate::spec::{PipelineSpec, StageSpec};
use crate::validate;

impl Serialize for PipelineSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A pipeline as a configuration file holds it, read but not yet validated: the pipeline text
/// (`"top_k(40) | temp(0.7)"`) or a list of stage objects (`[{"stage": "top_k", "k": 40},
/// {"stage": "temp", "t": 0.7}]`: the key `stage` names the stage, every other key is a
/// parameter). Validation needs the registry the pipeline will run with (built-ins and
/// plugins): [`PipelineSource::resolve`] turns it into a [`PipelineSpec`]; [`SpecSeed`] does
/// both in one deserialization.
///
/// In the list form, JSON values map onto [`Value`] as they are: an integer is an integer, a
/// number with a fraction or exponent is a float, an object is a map with string keys. A map
/// with integer keys (token ids) or an infinity needs the text form, which can write
/// `{13: -inf}`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSource(Source);

#[derive(Debug, Clone, PartialEq)]
enum Source {
    Text(String),
    Stages(Vec<ast::Stage>),
}

impl PipelineSource {
    /// A source holding pipeline text.
    pub fn text(text: impl Into<String>) -> Self {
        PipelineSource(Source::Text(text.into()))
    }

    /// A source holding stages given directly, each argument by name (`("top_k",
    /// [("k", Int(40))])`): what a front end makes from fields that are not pipeline text
    /// (an API request's sampling fields), so that it never formats text to parse it back.
    /// [`PipelineSource::resolve`] validates them exactly as the list form (and so as text):
    /// names, parameters, types and ranges checked, defaults filled, `dist` appended.
    pub fn stages(stages: impl IntoIterator<Item = StageSpec>) -> Self {
        let stages: Vec<ast::Stage> = stages
            .into_iter()
            .enumerate()
            .map(|(i, stage)| {
                let at = Span::new(i, i + 1);
                ast::Stage {
                    name: stage.name,
                    name_span: at,
                    span: at,
                    args: stage
                        .args
                        .into_iter()
                        .map(|(name, value)| ast::Arg {
                            name: Some((name, at)),
                            value,
                            value_span: at,
                            span: at,
                        })
                        .collect(),
                }
            })
            .collect();
        PipelineSource(Source::Stages(stages))
    }

    /// Validates the pipeline against `registry`'s schemas (no stage is built).
    ///
    /// # Errors
    /// A [`SourceError`]: the text's [`Diagnostic`], or for the list form the diagnostic of the
    /// stage at fault with its 1-based index.
    pub fn resolve(&self, registry: &Registry) -> Result<PipelineSpec, SourceError> {
        match &self.0 {
            Source::Text(text) => PipelineSpec::parse(text, registry).map_err(SourceError::Text),
            Source::Stages(stages) if stages.is_empty() => {
                Err(SourceError::Text(empty_pipeline("")))
            }
            Source::Stages(stages) => {
                let blank = " ".repeat(stages.len());
                validate::validate(stages, registry, &blank)
                    .map(|(spec, _)| spec)
                    .map_err(|d| {
                        let index = (d.column - 1).min(stages.len() - 1);
                        SourceError::Stage {
                            index: index + 1,
                            name: stages[index].name.clone(),
                            diagnostic: d,
                        }
                    })
            }
        }
    }
}

/// Why a [`PipelineSource`] does not validate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SourceError {
    /// The pipeline text's diagnostic.
    #[error("{0}")]
    Text(Diagnostic),
    /// The diagnostic of one stage object of the list form.
    #[error("stage {index} (`{name}`): {}{}", diagnostic.message, HelpSuffix(diagnostic.help.as_deref()))]
    Stage {
        /// 1-based position of the stage object.
        index: usize,
        /// The name it gave.
        name: String,
        /// What is wrong (its column is `index`).
        diagnostic: Diagnostic,
    },
}

/// Deserializes a [`PipelineSpec`] validated against a registry: a [`PipelineSource`] then
/// [`PipelineSource::resolve`]. `SpecSeed(&registry).deserialize(deserializer)`.
#[derive(Debug, Clone, Copy)]
pub struct SpecSeed<'a>(pub &'a Registry);

impl<'de> DeserializeSeed<'de> for SpecSeed<'_> {
    type Value = PipelineSpec;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<PipelineSpec, D::Error> {
        PipelineSource::deserialize(deserializer)?
            .resolve(self.0)
            .map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for PipelineSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SourceVisitor)
    }
}

struct SourceVisitor;

impl<'de> Visitor<'de> for SourceVisitor {
    type Value = PipelineSource;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pipeline string or a list of stage objects")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<PipelineSource, E> {
        Ok(PipelineSource::text(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PipelineSource, A::Error> {
        let mut stages = Vec::new();
        while let Some(StageObject(mut stage)) = seq.next_element()? {
            // Each stage "sits" at its index in a blank text of one column per stage, so that a
            // diagnostic's column tells which stage it is about.
            let at = Span::new(stages.len(), stages.len() + 1);
            stage.span = at;
            stage.name_span = at;
            for arg in &mut stage.args {
                arg.span = at;
                arg.value_span = at;
                if let Some((_, span)) = &mut arg.name {
                    *span = at;
                }
            }
            stages.push(stage);
        }
        if stages.is_empty() {
            return Err(de::Error::custom(empty_pipeline("")));
        }
        Ok(PipelineSource(Source::Stages(stages)))
    }
}

/// `{"stage": "top_k", "k": 40}`.
struct StageObject(ast::Stage);

impl<'de> Deserialize<'de> for StageObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(StageVisitor)
    }
}

struct StageVisitor;

impl<'de> Visitor<'de> for StageVisitor {
    type Value = StageObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a stage object such as {\"stage\": \"top_k\", \"k\": 40}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StageObject, A::Error> {
        let mut name: Option<String> = None;
        let mut args = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "stage" {
                if name.is_some() {
                    return Err(de::Error::duplicate_field("stage"));
                }
                name = Some(map.next_value()?);
            } else {
                // The argument list's parentheses are the first level of nesting.
                let value = map.next_value_seed(ValueSeed { depth: 1 })?;
                args.push(ast::Arg {
                    name: Some((key, Span::default())),
                    value,
                    value_span: Span::default(),
                    span: Span::default(),
                });
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("stage"))?;
        Ok(StageObject(ast::Stage {
            name,
            name_span: Span::default(),
            span: Span::default(),
            args,
        }))
    }
}

/// Reads a [`Value`] from a self-describing format such as JSON, `depth` brackets deep,
/// refusing to nest deeper than the text form may ([`crate::MAX_NESTING`]), so that every
/// spec read this way prints as text that parses back.
#[derive(Clone, Copy)]
struct ValueSeed {
    depth: usize,
}

impl ValueSeed {
    fn inner<E: de::Error>(self) -> Result<ValueSeed, E> {
        let depth = self.depth + 1;
        if depth > crate::MAX_NESTING {
            return Err(E::custom(alloc::format!(
                "lists and maps nested more than {} levels deep",
                crate::MAX_NESTING
            )));
        }
        Ok(ValueSeed { depth })
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, string, boolean, list or map")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v).map(Value::Int).map_err(|_| {
            E::custom(alloc::format!(
                "integer {v} out of range (the largest is {})",
                i64::MAX
            ))
        })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if v.is_nan() {
            return Err(E::custom("NaN is not a pipeline value"));
        }
        Ok(Value::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.into()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            items.push(v);
        }
        Ok(Value::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((Value::Str(key), map.next_value_seed(inner)?));
        }
        Ok(Value::Map(entries))
    }
}
