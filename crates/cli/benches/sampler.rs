//! Criterion benches of pipelines per token against the floor: the workload of
//! `sieve bench sampler` (`sieve_cli::workload`: Normal(0, 2.5²) logits from a fixed seed, a
//! fixed 64-token history, the logits vector handed over with `Candidates::load_owned` (refilled
//! untimed before each token) + `Pipeline::sample` per token, and `math::max` over the logits
//! as the floor), timed by criterion instead.
//!
//! Run with `cargo bench -p sieve-cli --bench sampler`; filter with a name, e.g.
//! `cargo bench -p sieve-cli --bench sampler -- 128256/chain`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sieve_cli::workload::{normal_logits, SamplerWorkload, LOGITS_SEED};

/// Vocabulary sizes: Llama 2 / Mistral, and Llama 3.
const VOCABS: [usize; 2] = [32_000, 128_256];

/// `(bench name, pipeline)`.
const PIPELINES: [(&str, &str); 9] = [
    ("greedy", "greedy"),
    ("dist", "dist"),
    ("top_k", "top_k(40)"),
    ("top_p", "top_p(0.9)"),
    ("min_p", "min_p(0.05)"),
    ("typical", "typical(0.9)"),
    ("mirostat_v2", "mirostat_v2"),
    ("chain", "temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)"),
    (
        "penalty_chain",
        "penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)",
    ),
];

/// The workload of `text` on `vocab` generated logits; panics with the diagnostic if the
/// pipeline does not compile or fails on its first token.
fn workload(text: &str, vocab: usize) -> SamplerWorkload {
    let registry = sieve_samplers::builtin_registry();
    let cx = sieve_core::BuildContext {
        seed: LOGITS_SEED,
        vocab: None,
    };
    let compiled = sieve_cli::pipeline::compile(text, &registry, &cx)
        .unwrap_or_else(|f| panic!("{}", f.message()));
    let mut w = SamplerWorkload::new(compiled.pipeline, normal_logits(vocab, LOGITS_SEED));
    if let Err(e) = w.step_copying() {
        panic!("`{text}` fails on the bench logits: {e}");
    }
    w
}

fn sampler(c: &mut Criterion) {
    for vocab in VOCABS {
        let mut group = c.benchmark_group(format!("sampler/{vocab}"));
        group.throughput(Throughput::Elements(vocab as u64));
        group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        let floor = workload("greedy", vocab);
        group.bench_function("floor", |b| b.iter(|| floor.floor()));
        for (name, text) in PIPELINES {
            let mut w = workload(text, vocab);
            group.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        w.refill();
                        let t = Instant::now();
                        let _ = std::hint::black_box(w.step());
                        total += t.elapsed();
                    }
                    total
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, sampler);
criterion_main!(benches);
