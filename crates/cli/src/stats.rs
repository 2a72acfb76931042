//! Summary statistics of timing samples: the engine's, so that every speed report (`sieve
//! bench sampler`, `sieve bench model`, `sieve generate --stats`) computes them one way.

pub use sieve_engine::Summary;
