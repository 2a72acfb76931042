//! `sieve.samplers()`, `sieve.check()` and `sieve.load_plugin()`: the stages this process
//! knows, as Python values.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use sieve_core::{BuildContext, ParamSpec, StageInfo, Value};

use crate::error::{guard, Error};
use crate::registry;

/// The canonical form of `text` (every argument named, defaults filled, `dist` appended when
/// it ends in no selector), after building it with the default build context so stage
/// constructors check their arguments too, as `sieve check` does.
#[pyfunction]
pub fn check(text: &str) -> PyResult<String> {
    let canonical = guard(|| {
        let registry = registry::current();
        let compiled = sieve_dsl::compile(text, &registry, &BuildContext::default())
            .map_err(|d| Error::pipeline(&d, text))?;
        Ok(compiled.spec.to_string())
    })?;
    Ok(canonical)
}

/// The canonical form of `text` after parsing and validating it against the stages' schemas
/// (names, types, ranges), without building it: what can be checked without a vocabulary.
#[pyfunction]
pub fn parse(text: &str) -> PyResult<String> {
    let canonical = guard(|| {
        let registry = registry::current();
        let parsed =
            sieve_dsl::Parsed::parse(text, &registry).map_err(|d| Error::pipeline(&d, text))?;
        Ok(parsed.spec().to_string())
    })?;
    Ok(canonical)
}

/// Every known stage, sorted by name, as dicts (the shape of `sieve samplers --json`).
#[pyfunction]
pub fn samplers(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let registry = registry::current();
    let stages = registry
        .iter()
        .map(|e| stage(py, &e.info))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, stages)
}

/// Loads a plugin library and registers its stages; returns
/// `{"name", "version", "file", "stages": [names]}`.
#[pyfunction]
pub fn load_plugin(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let plugin = guard(|| registry::load(&path))?;
    let d = PyDict::new(py);
    d.set_item("name", plugin.name())?;
    d.set_item("version", plugin.version())?;
    d.set_item("file", plugin.origin())?;
    let names: Vec<&str> = plugin.stages().map(|s| s.name.as_str()).collect();
    d.set_item("stages", names)?;
    Ok(d)
}

/// One stage as a dict.
fn stage<'py>(py: Python<'py>, info: &StageInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &info.name)?;
    d.set_item("doc", &info.doc)?;
    d.set_item("selector", info.selector)?;
    d.set_item("origin", &info.origin)?;
    match &info.plugin {
        None => d.set_item("plugin", py.None())?,
        Some(p) => {
            let plugin = PyDict::new(py);
            plugin.set_item("name", &p.name)?;
            plugin.set_item("version", &p.version)?;
            plugin.set_item("file", &p.file)?;
            d.set_item("plugin", plugin)?;
        }
    }
    let params = info
        .params
        .iter()
        .map(|p| param(py, p))
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("params", params)?;
    Ok(d)
}

/// One parameter as a dict.
fn param<'py>(py: Python<'py>, p: &ParamSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("type", p.kind.short_name())?;
    d.set_item("required", p.default.is_none())?;
    match &p.default {
        None => d.set_item("default", py.None())?,
        Some(v) => d.set_item("default", value(py, v)?)?,
    }
    match &p.range {
        None => d.set_item("range", py.None())?,
        Some(r) => {
            let range = PyDict::new(py);
            range.set_item("min", r.min)?;
            range.set_item("max", r.max)?;
            range.set_item("min_inclusive", r.min_inclusive)?;
            range.set_item("max_inclusive", r.max_inclusive)?;
            d.set_item("range", range)?;
        }
    }
    d.set_item("doc", &p.doc)?;
    Ok(d)
}

/// A parameter value as the Python value it reads as (a map is a dict; infinities are
/// floats).
fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        Value::List(items) => {
            let items = items
                .iter()
                .map(|x| value(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Map(pairs) => {
            let d = PyDict::new(py);
            for (k, x) in pairs {
                let key = value(py, k)?;
                // A list key (not hashable) becomes a tuple.
                let key = match key.cast::<PyList>() {
                    Ok(list) => PyTuple::new(py, list.iter())?.into_any(),
                    Err(_) => key,
                };
                d.set_item(key, value(py, x)?)?;
            }
            d.into_any()
        }
    })
}
