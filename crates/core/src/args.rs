//! The validated arguments a stage constructor receives.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::Error;
use crate::params::{ParamKind, Value};

/// The validated arguments of one stage: every parameter of its schema by name, defaults
/// filled, types checked. Constructors read them with the typed getters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Args {
    stage: String,
    values: Vec<(String, Value)>,
}

impl Args {
    /// Arguments of `stage`, in schema order.
    pub fn new(stage: &str, values: Vec<(String, Value)>) -> Self {
        Args {
            stage: stage.to_string(),
            values,
        }
    }
    /// The stage these arguments belong to.
    pub fn stage(&self) -> &str {
        &self.stage
    }
    /// All `(name, value)` pairs in schema order.
    pub fn values(&self) -> &[(String, Value)] {
        &self.values
    }
    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    fn require(&self, name: &str) -> Result<&Value, Error> {
        self.get(name).ok_or_else(|| Error::MissingArgument {
            stage: self.stage.clone(),
            param: name.to_string(),
        })
    }
    fn wrong(&self, name: &str, expected: ParamKind, found: &Value) -> Error {
        Error::WrongType {
            stage: self.stage.clone(),
            param: name.to_string(),
            expected,
            found: found.type_name(),
        }
    }
    /// An error about argument `name` of this stage, for constructors that check more than the
    /// schema can.
    pub fn invalid(&self, name: &str, message: impl Into<String>) -> Error {
        Error::InvalidArgument {
            stage: self.stage.clone(),
            param: name.to_string(),
            message: message.into(),
        }
    }
    /// A number.
    pub fn f64(&self, name: &str) -> Result<f64, Error> {
        let v = self.require(name)?;
        v.as_f64()
            .ok_or_else(|| self.wrong(name, ParamKind::Float, v))
    }
    /// A number as `f32`.
    pub fn f32(&self, name: &str) -> Result<f32, Error> {
        self.f64(name).map(|x| x as f32)
    }
    /// An integer.
    pub fn i64(&self, name: &str) -> Result<i64, Error> {
        match self.require(name)? {
            Value::Int(i) => Ok(*i),
            v => Err(self.wrong(name, ParamKind::Int, v)),
        }
    }
    /// A non-negative integer as `usize` (negative values are an [`Error::InvalidArgument`]).
    pub fn usize(&self, name: &str) -> Result<usize, Error> {
        let i = self.i64(name)?;
        usize::try_from(i).map_err(|_| self.invalid(name, alloc::format!("{i} is negative")))
    }
    /// A boolean.
    pub fn bool(&self, name: &str) -> Result<bool, Error> {
        match self.require(name)? {
            Value::Bool(b) => Ok(*b),
            v => Err(self.wrong(name, ParamKind::Bool, v)),
        }
    }
    /// A string.
    pub fn str(&self, name: &str) -> Result<&str, Error> {
        match self.require(name)? {
            Value::Str(s) => Ok(s),
            v => Err(self.wrong(name, ParamKind::Str, v)),
        }
    }
    /// A list.
    pub fn list(&self, name: &str) -> Result<&[Value], Error> {
        match self.require(name)? {
            Value::List(items) => Ok(items),
            v => Err(self.wrong(name, ParamKind::List, v)),
        }
    }
    /// A map, as its entries in written order.
    pub fn map(&self, name: &str) -> Result<&[(Value, Value)], Error> {
        match self.require(name)? {
            Value::Map(entries) => Ok(entries),
            v => Err(self.wrong(name, ParamKind::Map, v)),
        }
    }
}
