//! Test fixture: `panics(at)` panics where it is told (`"create"`, `"apply"`, `"accept"`),
//! and `rejects(level)` refuses a level its schema allows but it cannot use.

use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

/// Panics in the call named by `at`.
pub struct Panics {
    at: String,
}

/// Parameters of `panics`.
#[derive(Params)]
pub struct PanicsParams {
    /// create, apply or accept
    #[param(default = "apply")]
    at: String,
}

impl Sampler for Panics {
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

impl Stage for Panics {
    type Params = PanicsParams;
    const NAME: &'static str = "panics";
    const DOC: &'static str = "panics in create, apply or accept";
    fn new(p: PanicsParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        assert!(p.at != "create", "panics was told to panic in create");
        Ok(Panics { at: p.at })
    }
}

/// Accepts `level` up to 3 only, though its schema allows up to 100.
pub struct Rejects;

/// Parameters of `rejects`.
#[derive(Params)]
pub struct RejectsParams {
    /// at most 3, in fact
    #[param(default = 1, range = Range::closed(0.0, 100.0))]
    level: i64,
}

impl Sampler for Rejects {
    fn apply(&mut self, _c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        Ok(())
    }
}

impl Stage for Rejects {
    type Params = RejectsParams;
    const NAME: &'static str = "rejects";
    const DOC: &'static str = "refuses a level above 3";
    fn new(p: RejectsParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
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

sieve_plugin::export_plugin!(
    name = "faulty",
    version = "0.0.0",
    stages = [Panics, Rejects]
);
