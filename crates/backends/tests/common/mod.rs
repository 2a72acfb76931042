//! Shared helpers of the integration tests: the committed fixtures made by
//! `tools/make_fixtures.py`, the CPU runs of both paths ([`RUNS`]), and a greedy stage.
#![allow(dead_code)]

use std::path::PathBuf;

use serde::Deserialize;
use sieve_backends::model::Kernels;
use sieve_backends::{BackendKind, LoadedModel, ModelDir};
use sieve_core::Pipeline;
use sieve_samplers::greedy::Greedy as GreedyStage;

/// Every fixture directory name.
pub const FIXTURES: [&str; 7] = [
    "llama-gqa-tied",
    "llama-f32-linear",
    "qwen2-bias",
    "mistral-window-sharded",
    "qwen3-headdim",
    "gemma2-softcap",
    "gemma3-window",
];

/// The tolerance the logits must meet (max absolute difference).
pub const TOLERANCE: f32 = 1e-4;

/// One CPU backend computing one path: the host path (`forward_host`, what every CPU run
/// uses) or the Burn path (`forward`, what `--backend cuda` runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub kind: BackendKind,
    pub kernels: Kernels,
}

/// Both paths on both CPU backends: the fixtures hold each of them to transformers.
pub const RUNS: [Run; 4] = [
    Run {
        kind: BackendKind::Ndarray,
        kernels: Kernels::Host,
    },
    Run {
        kind: BackendKind::Flex,
        kernels: Kernels::Host,
    },
    Run {
        kind: BackendKind::Ndarray,
        kernels: Kernels::Backend,
    },
    Run {
        kind: BackendKind::Flex,
        kernels: Kernels::Backend,
    },
];

impl Run {
    /// Loads the model of `dir` for this run.
    pub fn load_dir(self, dir: &ModelDir) -> LoadedModel {
        LoadedModel::from_checkpoint_with(
            self.kind,
            self.kernels,
            dir.transformer_config().clone(),
            &dir.checkpoint().unwrap(),
        )
        .unwrap()
    }

    /// Loads the fixture `name` for this run.
    pub fn load(self, name: &str) -> LoadedModel {
        self.load_dir(&ModelDir::open(fixture_dir(name)).unwrap())
    }

    /// Whether this run is on the host path, whose results are bit-identical whatever else
    /// is in the batch.
    pub fn batch_invariant(self) -> bool {
        self.kernels == Kernels::Host
    }

    /// Whether two computations of the same logits agree as this run promises: bit for bit
    /// on the host path; within [`TOLERANCE`] on the Burn path, whose matrix products and
    /// softmax reduce in an order that depends on the shapes in the batch (the largest
    /// difference seen is printed, for the record: `cargo test -- --nocapture`).
    pub fn agree(self, a: &[f32], b: &[f32]) -> bool {
        if self.batch_invariant() {
            return a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        }
        let d = max_abs_diff(a, b);
        if d > 0.0 {
            eprintln!("{self}: batch difference {d:e}");
        }
        d <= TOLERANCE
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = match self.kernels {
            Kernels::Host => "host",
            Kernels::Backend => "burn",
        };
        write!(f, "{} ({path} path)", self.kind)
    }
}

/// `tests/fixtures/models/<name>` at the workspace root.
pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/models")
        .join(name)
}

/// The greedy continuation transformers produced.
#[derive(Debug, Deserialize)]
pub struct Greedy {
    pub prompt_tokens: usize,
    pub max_new_tokens: usize,
    pub tokens: Vec<u32>,
}

/// `expected.json` of a fixture.
#[derive(Debug, Deserialize)]
pub struct Expected {
    pub tokens: Vec<u32>,
    pub shape: [usize; 2],
    pub greedy: Greedy,
}

/// A fixture's expected values: the input, and the logits per position.
pub struct Fixture {
    pub dir: PathBuf,
    pub expected: Expected,
    pub logits: Vec<Vec<f32>>,
}

/// Reads the fixture `name`.
pub fn fixture(name: &str) -> Fixture {
    let dir = fixture_dir(name);
    let expected: Expected =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let raw = std::fs::read(dir.join("logits.f32")).unwrap();
    let flat: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let [rows, vocab] = expected.shape;
    assert_eq!(
        flat.len(),
        rows * vocab,
        "{name}: logits.f32 does not match the shape"
    );
    assert_eq!(rows, expected.tokens.len());
    let logits = flat.chunks_exact(vocab).map(<[f32]>::to_vec).collect();
    Fixture {
        dir,
        expected,
        logits,
    }
}

/// The largest absolute difference between two logits vectors of one length.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// A pipeline of the built-in `greedy` stage alone: the first candidate with the largest
/// logit (the lowest id on ties), as transformers' greedy search (`argmax`) selects.
pub fn greedy_pipeline() -> Pipeline {
    Pipeline::new(vec![("greedy".to_string(), Box::new(GreedyStage::new()))])
}
