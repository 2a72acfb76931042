//! A request's pipeline built once per choice: the pipeline its sampling fields choose (see
//! [`crate::sampling`]: the default parsed at startup, `sampler` parsed once, or typed stages
//! from the OpenAI fields), a server file argument refused on the spec before anything is
//! built, then the stages (choice `j` seeded `seed + j`), never parsing again.

use sieve_core::{BuildContext, Pipeline};
use sieve_dsl::PipelineSpec;

use crate::openai::fields::SamplingFields;
use crate::sampling::{choose, sets_any, Chosen};
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
    let chosen = choose(sampling, &state.defaults, &state.registry)?;
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
    if sets_any(sampling) {
        // Checked on the spec, before any stage is built: a stage never reads a file a
        // request names (whether it exists, or what it holds, would leak into the error).
        refuse_server_files(chosen.spec())?;
    }
    let canonical = chosen.spec().to_string();
    let cx = BuildContext { seed, vocab };
    let mut all = Vec::with_capacity(prompts);
    for _ in 0..prompts {
        let copies = match &chosen {
            Chosen::Default(parsed) => parsed
                .copies(&state.registry, &cx, n)
                .map_err(|d| failed(d, parsed.source())),
            Chosen::Text(parsed) => parsed
                .copies(&state.registry, &cx, n)
                .map_err(|d| failed(d, parsed.source())),
            // Typed stages have no text of their own: an error points into the canonical one.
            Chosen::Stages(spec) => (0..n as u64)
                .map(|j| {
                    let cx = BuildContext {
                        seed: seed.wrapping_add(j),
                        vocab,
                    };
                    spec.build(&state.registry, &cx)
                        .map_err(|d| failed(d, &canonical))
                })
                .collect(),
        }?;
        all.push(copies);
    }
    Ok((canonical, all))
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
