//! The plugins, built with cargo and driven through the real `sieve` binary: listing, checking,
//! DRY and top-nσ outputs (insta snapshots and hand-derived vectors), the template, and every
//! fault a plugin file can have.

mod abi1;
mod build;
mod dry;
mod faults;
mod grammar;
mod listing;
mod standalone;
mod template;
mod top_n_sigma;

#[path = "../common/mod.rs"]
mod common;

pub use common::{ok, sieve, sieve_with, Run};

/// `(id, logit)` of every surviving candidate of `sieve apply … --json`, and the selection.
pub fn apply_json(args: &[&str]) -> (Vec<(u32, f32)>, u64) {
    let mut all = vec!["apply", "--json", "--seed", "1"];
    all.extend_from_slice(args);
    let v: serde_json::Value = serde_json::from_str(&ok(&all)).expect("valid JSON");
    let survivors = v["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().expect("id") as u32,
                c["logit"].as_f64().expect("logit") as f32,
            )
        })
        .collect();
    (survivors, v["selected"].as_u64().expect("selected"))
}
