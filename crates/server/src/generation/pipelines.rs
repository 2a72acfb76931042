//! A request's pipeline built once per choice: the text its sampling fields make (see
//! [`crate::sampling`]), parsed once, a server file argument refused on the parsed spec before
//! anything is built, then the stages (choice `j` seeded `seed + j`) from that one parse.

use sieve_core::{BuildContext, Pipeline};
use sieve_dsl::{Parsed, PipelineSpec};

use crate::openai::fields::SamplingFields;
use crate::sampling::{pipeline_text, sets_any};
use crate::state::AppState;
use crate::{Error, Result};

/// The canonical pipeline and, for each of `prompts` prompts, one built copy per choice
/// (choice `j` with seed `seed + j`).
pub(super) fn pipelines(
    state: &AppState,
    sampling: &SamplingFields,
    seed: u64,
    n: usize,
    prompts: usize,
) -> Result<(String, Vec<Vec<Pipeline>>)> {
    let text = pipeline_text(sampling, &state.defaults, &state.registry)?;
    let vocab = Some(&*state.model.vocab);
    let failed = |d: sieve_dsl::Diagnostic, source: &str| {
        if sampling.sampler.is_some() {
            Error::Sampler(d.render(source))
        } else {
            Error::BadRequest {
                message: format!(
                    "the request's sampling fields make a pipeline that does not build:\n{}",
                    d.render(source)
                ),
                param: None,
            }
        }
    };
    let parsed = Parsed::parse(&text, &state.registry).map_err(|d| failed(d, &text))?;
    if sets_any(sampling) {
        // Checked on the parsed spec, before any stage is built: a stage never reads a file
        // a request names (whether it exists, or what it holds, would leak into the error).
        refuse_server_files(parsed.spec())?;
    }
    let cx = BuildContext { seed, vocab };
    let mut all = Vec::with_capacity(prompts);
    for _ in 0..prompts {
        all.push(
            parsed
                .copies(&state.registry, &cx, n)
                .map_err(|d| failed(d, &text))?,
        );
    }
    Ok((parsed.spec().to_string(), all))
}

/// Refuses a stage argument that reads a file on the server (`file`, as `grammar(file=…)`
/// has), with a 400 naming the stage.
///
/// # Errors
/// [`Error::Sampler`].
pub fn refuse_server_files(spec: &PipelineSpec) -> Result<()> {
    for stage in &spec.stages {
        if stage
            .get("file")
            .is_some_and(|v| !matches!(v, sieve_core::Value::Str(s) if s.is_empty()))
        {
            return Err(Error::Sampler(format!(
                "stage `{}`: `file` reads a file on the server and is not allowed in a request; \
                 pass the grammar or schema inline",
                stage.name
            )));
        }
    }
    Ok(())
}
