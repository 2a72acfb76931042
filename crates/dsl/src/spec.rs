//! [`PipelineSpec`]: a validated pipeline in canonical form, and its text. Data only: parsing
//! and building live in the compiler ([`crate::compile`]), which depends on this module.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use sieve_core::Value;

use crate::span::{Span, StageSpans};

/// A validated pipeline in canonical form: every argument by name, in schema order, defaults
/// filled, and `dist` appended when the text did not end in a selector.
///
/// `Display` prints the canonical text (`top_k(k=40) | top_p(p=0.9, min_keep=1) |
/// dist(seed=-1)`); parsing that text with the same registry gives an identical spec.
///
/// With serde, a spec serializes as its canonical text; reading one needs a registry
/// ([`crate::SpecSeed`], or [`crate::PipelineSource`] then [`PipelineSource::resolve`](crate::PipelineSource::resolve); see the crate documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineSpec {
    /// The stages in run order.
    pub stages: Vec<StageSpec>,
}

/// One stage of a [`PipelineSpec`]: its name and every parameter's value, in schema order.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSpec {
    /// The registered stage name.
    pub name: String,
    /// `(parameter, value)` for every parameter of the stage's schema, in schema order.
    pub args: Vec<(String, Value)>,
}

impl StageSpec {
    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl PipelineSpec {
    /// The canonical text and where each stage and argument is in it.
    pub(crate) fn canonical(&self) -> (String, Vec<StageSpans>) {
        let mut out = String::new();
        let mut spans = Vec::with_capacity(self.stages.len());
        for (i, stage) in self.stages.iter().enumerate() {
            if i > 0 {
                out.push_str(" | ");
            }
            let start = out.len();
            out.push_str(&stage.name);
            let mut args = Vec::with_capacity(stage.args.len());
            if !stage.args.is_empty() {
                out.push('(');
                for (j, (name, value)) in stage.args.iter().enumerate() {
                    if j > 0 {
                        out.push_str(", ");
                    }
                    let arg_start = out.len();
                    let _ = write!(out, "{name}={value}");
                    args.push((name.clone(), Span::new(arg_start, out.len())));
                }
                out.push(')');
            }
            spans.push(StageSpans {
                stage: Span::new(start, out.len()),
                args,
                appended: false,
            });
        }
        (out, spans)
    }
}

/// The canonical text: every argument by name, in schema order, stages joined by ` | `; a
/// stage without parameters is written without parentheses.
impl fmt::Display for PipelineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical().0)
    }
}
