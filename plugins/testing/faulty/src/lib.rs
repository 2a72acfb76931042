//! Test fixture: `panics(at)` panics where it is told (`"create"`, `"apply"`, `"accept"`),
//! and `rejects(level)` refuses a level its schema allows but it cannot use.

use serde::Deserialize;
use sieve_core::plugin::PluginStage;
use sieve_core::{
    BuildContext, Candidates, Context, Error, ParamKind, ParamSpec, Range, Sampler, Value,
};

/// Panics in the call named by `at`.
pub struct Panics {
    at: String,
}

/// Parameters of `panics`.
#[derive(Deserialize)]
pub struct PanicsParams {
    at: String,
}

impl Sampler for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn apply(&mut self, _c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        assert!(self.at != "apply", "panics was told to panic in apply");
        Ok(())
    }
    fn accept(&mut self, token: u32) {
        assert!(
            self.at != "accept",
            "panics was told to panic in accept (token {token})"
        );
    }
}

impl PluginStage for Panics {
    type Params = PanicsParams;
    const NAME: &'static str = "panics";
    const DOC: &'static str = "panics in create, apply or accept";
    fn params() -> Vec<ParamSpec> {
        vec![
            ParamSpec::new("at", ParamKind::Str, "create, apply or accept")
                .with_default(Value::Str("apply".into())),
        ]
    }
    fn create(p: PanicsParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        assert!(p.at != "create", "panics was told to panic in create");
        Ok(Panics { at: p.at })
    }
}

/// Accepts `level` up to 3 only, though its schema allows up to 100.
pub struct Rejects;

/// Parameters of `rejects`.
#[derive(Deserialize)]
pub struct RejectsParams {
    level: i64,
}

impl Sampler for Rejects {
    fn name(&self) -> &str {
        "rejects"
    }
    fn apply(&mut self, _c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        Ok(())
    }
}

impl PluginStage for Rejects {
    type Params = RejectsParams;
    const NAME: &'static str = "rejects";
    const DOC: &'static str = "refuses a level above 3";
    fn params() -> Vec<ParamSpec> {
        vec![ParamSpec::int(
            "level",
            1,
            Range::closed(0.0, 100.0),
            "at most 3, in fact",
        )]
    }
    fn create(p: RejectsParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        if p.level > 3 {
            return Err(Error::InvalidArgument {
                stage: "rejects".into(),
                param: "level".into(),
                message: format!("level {} is too high; this stage takes at most 3", p.level),
            });
        }
        Ok(Rejects)
    }
}

sieve_core::export_plugin!(
    name = "faulty",
    version = "0.0.0",
    stages = [Panics, Rejects]
);
