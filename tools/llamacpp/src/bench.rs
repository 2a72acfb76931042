//! `bench FILE.gguf`: prefill tokens/s and greedy decode ms/token, medians over repetitions.

use std::time::Instant;

use llama_cpp_2::token::LlamaToken;
use serde_json::json;

use crate::args::Args;
use crate::cputime;
use crate::engine::{argmax, decode, ContextSpec, Engine};
use crate::error::{Error, Result};

/// Runs `--reps` repetitions of: clear the KV cache, prefill `--prompt` tokens in one batch,
/// then `--gen` greedy single-token steps (each timed; a repetition's figure is the median
/// step); prints the medians over repetitions (and the best repetition) as text and one JSON
/// line.
pub fn run(engine: &Engine, mut args: Args) -> Result<()> {
    let prompt: usize = args.number("--prompt", 256)?;
    let gen: usize = args.number("--gen", 64)?;
    let reps: usize = args.number("--reps", 5)?;
    let mut spec = ContextSpec::from_args(&mut args, Some(2), "f16")?;
    let file = args.positional("FILE.gguf")?;
    args.finish()?;
    if prompt == 0 || gen == 0 || reps == 0 {
        return Err(Error::Usage(
            "--prompt, --gen and --reps must be at least 1".into(),
        ));
    }

    let model = engine.load(&file)?;
    let n_vocab = u64::try_from(model.n_vocab()).unwrap_or(1).max(1);
    spec.n_ctx = u32::try_from(prompt + gen + 1).map_err(|_| Error::Usage("too long".into()))?;
    spec.n_batch = u32::try_from(prompt).unwrap_or(u32::MAX);
    let mut ctx = engine.context(&model, &spec)?;
    let ids = pseudo_random_ids(prompt, n_vocab);

    // One untimed warm-up pass (page the weights in, set up the thread pool and buffers).
    decode(&mut ctx, &ids[..prompt.min(8)], 0, false)?;
    ctx.clear_kv_cache();

    let mut prefill_tps = Vec::with_capacity(reps);
    let mut decode_ms = Vec::with_capacity(reps);
    let mut prefill_cpu_s = 0.0;
    let mut decode_cpu_s = 0.0;
    for _ in 0..reps {
        ctx.clear_kv_cache();
        let cpu0 = cputime::process_seconds();
        let t = Instant::now();
        decode(&mut ctx, &ids, 0, false)?;
        let secs = t.elapsed().as_secs_f64();
        prefill_tps.push(prompt as f64 / secs);
        let cpu1 = cputime::process_seconds();
        prefill_cpu_s += cpu1.zip(cpu0).map_or(f64::NAN, |(b, a)| b - a);

        let mut last = i32::try_from(prompt - 1).unwrap_or(0);
        let mut steps = Vec::with_capacity(gen);
        for step in 0..gen {
            let next = LlamaToken(i32::try_from(argmax(ctx.get_logits_ith(last))).unwrap_or(0));
            let pos = i32::try_from(prompt + step).unwrap_or(i32::MAX);
            let t = Instant::now();
            decode(&mut ctx, &[next], pos, false)?;
            steps.push(t.elapsed().as_secs_f64() * 1e3);
            last = 0;
        }
        decode_ms.push(median(&mut steps));
        let cpu2 = cputime::process_seconds();
        decode_cpu_s += cpu2.zip(cpu1).map_or(f64::NAN, |(b, a)| b - a);
    }
    // CPU time per token over all repetitions (10 ms ticks, summed over the whole run).
    let prefill_cpu_ms = prefill_cpu_s * 1e3 / (prompt * reps) as f64;
    let decode_cpu_ms = decode_cpu_s * 1e3 / (gen * reps) as f64;
    let prefill = median(&mut prefill_tps);
    let decode_med = median(&mut decode_ms);
    // Sorted by `median`: the best repetition, a steadier figure on a shared, loaded machine.
    let prefill_best = prefill_tps.last().copied().unwrap_or(f64::NAN);
    let decode_best = decode_ms.first().copied().unwrap_or(f64::NAN);
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}: prefill {prompt}: {prefill:.1} tokens/s (best {prefill_best:.1}; CPU {prefill_cpu_ms:.2} ms/token); decode: {decode_med:.2} ms/token (best {decode_best:.2}; CPU {decode_cpu_ms:.2}); threads {}, reps {reps}",
        crate::tokenize::file_name(&file),
        spec.threads
    );
    let doc = json!({
        "file": crate::tokenize::file_name(&file),
        "bytes": size,
        "llama_cpp": crate::info::version(),
        "system_info": crate::info::system_info(),
        "threads": spec.threads,
        "prompt": prompt,
        "gen": gen,
        "reps": reps,
        "kv": if spec.kv_f32 { "f32" } else { "f16" },
        "flash_attn": format!("{:?}", spec.flash_attn).to_lowercase(),
        "prefill_tokens_per_s": prefill,
        "decode_ms_per_token": decode_med,
        "prefill_tokens_per_s_best": prefill_best,
        "prefill_cpu_ms_per_token": prefill_cpu_ms,
        "decode_cpu_ms_per_token": decode_cpu_ms,
        "decode_ms_per_token_best": decode_best,
        "prefill_runs": prefill_tps,
        "decode_runs_ms": decode_ms,
    });
    println!("{doc}");
    Ok(())
}

/// `n` ids spread over the vocabulary by a fixed linear congruential sequence (no RNG crate;
/// the same ids every run).
fn pseudo_random_ids(n: usize, n_vocab: u64) -> Vec<LlamaToken> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            LlamaToken(i32::try_from((state >> 33) % n_vocab).unwrap_or(0))
        })
        .collect()
}

/// The median (mean of the middle two for an even count); sorts in place.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn pseudo_random_ids_stay_in_the_vocabulary_and_repeat_across_runs() {
        let a = pseudo_random_ids(256, 320);
        assert_eq!(a, pseudo_random_ids(256, 320));
        assert!(a.iter().all(|t| (0..320).contains(&t.0)));
        let distinct: std::collections::BTreeSet<i32> = a.iter().map(|t| t.0).collect();
        assert!(distinct.len() > 100, "only {} distinct ids", distinct.len());
    }
}
