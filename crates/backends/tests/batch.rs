//! The model as a `BatchModel`: several sequences per forward pass, each against its own
//! cache, give transformers' logits; a sequence's logits are bit-identical whatever else is
//! in the batch on the host path (batch invariance), within the fixtures' tolerance on the
//! Burn path (its matrix products reduce in an order that depends on the batch's shapes;
//! measured: at most 9.1e-6); fork and truncate act on one sequence only; a bad step changes
//! nothing. Every test runs both paths on both CPU backends ([`common::RUNS`]).

mod common;

use common::{fixture, max_abs_diff, FIXTURES, TOLERANCE};
use sieve_backends::{LoadedModel, ModelDir};
use sieve_engine::{BatchModel, Error, Feed, SeqId};

use common::{Run, RUNS};

fn load(name: &str, run: Run) -> LoadedModel {
    run.load(name)
}

/// Opens a sequence per prompt and prefills each, alone.
fn prefilled(model: &mut LoadedModel, prompts: &[&[u32]]) -> Vec<SeqId> {
    prompts
        .iter()
        .map(|p| {
            let s = model.open();
            model.step(&[Feed::last(s, p)]).unwrap();
            s
        })
        .collect()
}

#[test]
fn a_mixed_step_gives_every_sequence_transformers_logits() {
    for name in FIXTURES {
        let f = fixture(name);
        let t = &f.expected.tokens;
        let n = t.len();
        for kind in RUNS {
            let mut model = load(name, kind);
            // Three sequences: one prefilling the whole prompt, one decoding its last
            // token after a prefix, one feeding a middle chunk with logits everywhere.
            let decoding = prefilled(&mut model, &[&t[..n - 1]])[0];
            let chunked = prefilled(&mut model, &[&t[..3]])[0];
            let fresh = model.open();
            let out = model
                .step(&[
                    Feed::last(fresh, t),
                    Feed::last(decoding, &t[n - 1..]),
                    Feed::all(chunked, &t[3..n - 2]),
                ])
                .unwrap();
            let vocab = model.vocab_size();
            let check = |got: &[f32], pos: usize, what: &str| {
                let d = max_abs_diff(got, &f.logits[pos]);
                assert!(d <= TOLERANCE, "{name} on {kind}, {what}: {d} at {pos}");
            };
            check(&out[0], n - 1, "prefill");
            check(&out[1], n - 1, "decode");
            assert_eq!(out[2].len(), (n - 5) * vocab);
            for (i, row) in out[2].chunks_exact(vocab).enumerate() {
                check(row, 3 + i, "chunk");
            }
            assert_eq!(model.position(fresh).unwrap(), n);
            assert_eq!(model.position(decoding).unwrap(), n);
            assert_eq!(model.position(chunked).unwrap(), n - 2);
        }
    }
}

/// Decodes `steps` fixed tokens for each sequence, in batches formed by
/// `groups` (each step runs the sequences of one group together, every group every step),
/// returning each sequence's logits per step.
fn decode(
    model: &mut LoadedModel,
    seqs: &[SeqId],
    tokens: &[u32],
    steps: usize,
    groups: &[Vec<usize>],
) -> Vec<Vec<Vec<f32>>> {
    let mut out = vec![Vec::new(); seqs.len()];
    for step in 0..steps {
        for group in groups {
            let feeds: Vec<Feed<'_>> = group
                .iter()
                .map(|&i| Feed::last(seqs[i], &tokens[(step + i) % tokens.len()..][..1]))
                .collect();
            for (logits, &i) in model.step(&feeds).unwrap().into_iter().zip(group) {
                out[i].push(logits);
            }
        }
    }
    out
}

#[test]
fn a_sequence_gets_the_same_bits_alone_or_beside_others() {
    for name in FIXTURES {
        let f = fixture(name);
        let t = &f.expected.tokens;
        for kind in RUNS {
            let mut model = load(name, kind);
            // Eight sequences of different prompt lengths.
            let prompts: Vec<&[u32]> = (0..8).map(|i| &t[..2 + (i * 5) % (t.len() - 2)]).collect();
            let alone_seqs = prefilled(&mut model, &prompts);
            let singles: Vec<Vec<usize>> = (0..8).map(|i| vec![i]).collect();
            let alone = decode(&mut model, &alone_seqs, t, 3, &singles);
            for groups in [
                vec![(0..8).collect::<Vec<_>>()],
                vec![vec![7, 0, 3], vec![1, 2], vec![6, 5, 4]],
                vec![vec![2, 4, 6, 0], vec![1, 3, 5, 7]],
            ] {
                let seqs = prefilled(&mut model, &prompts);
                let batched = decode(&mut model, &seqs, t, 3, &groups);
                for i in 0..8 {
                    for step in 0..3 {
                        assert!(
                            kind.agree(&alone[i][step], &batched[i][step]),
                            "{name} on {kind}: sequence {i} step {step} in {groups:?} differs \
                             by {}",
                            max_abs_diff(&alone[i][step], &batched[i][step])
                        );
                    }
                }
                for s in seqs {
                    model.close(s);
                }
            }
            // A prefill beside decoding sequences leaves their bits alone, and its own.
            let seqs = prefilled(&mut model, &prompts[..2]);
            let fresh = model.open();
            let out = model
                .step(&[
                    Feed::last(seqs[0], &t[..1]),
                    Feed::last(fresh, prompts[5]),
                    Feed::last(seqs[1], &t[1..2]),
                ])
                .unwrap();
            assert!(
                kind.agree(&out[0], &alone[0][0]),
                "{name} on {kind}: beside a prefill"
            );
            assert!(
                kind.agree(&out[2], &alone[1][0]),
                "{name} on {kind}: beside a prefill"
            );
            let again = model.open();
            let solo = model.step(&[Feed::last(again, prompts[5])]).unwrap();
            assert!(
                kind.agree(&out[1], &solo[0]),
                "{name} on {kind}: a prefill beside decoders"
            );
        }
    }
}

#[test]
fn n_tokens_in_one_step_equal_n_steps_of_one() {
    for name in FIXTURES {
        let f = fixture(name);
        let t = &f.expected.tokens;
        for kind in RUNS {
            let mut model = load(name, kind);
            let [a, b] = prefilled(&mut model, &[&t[..4], &t[..4]])[..] else {
                unreachable!()
            };
            let chunk = model.step(&[Feed::all(a, &t[4..9])]).unwrap().remove(0);
            let vocab = model.vocab_size();
            for (i, row) in chunk.chunks_exact(vocab).enumerate() {
                let one = model.step(&[Feed::last(b, &t[4 + i..5 + i])]).unwrap();
                assert!(
                    kind.agree(row, &one[0]),
                    "{name} on {kind}: token {i} of the chunk differs by {}",
                    max_abs_diff(row, &one[0])
                );
            }
        }
    }
}

#[test]
fn fork_copies_one_sequence_and_truncate_rolls_back_one() {
    let name = FIXTURES[0];
    let t = fixture(name).expected.tokens;
    for kind in RUNS {
        let mut model = load(name, kind);
        let a = prefilled(&mut model, &[&t[..6]])[0];
        let b = model.fork(a).unwrap();
        assert_eq!(model.position(b).unwrap(), 6);
        // The fork continues exactly as the original would; diverging leaves it alone.
        let out = model
            .step(&[Feed::last(a, &t[6..7]), Feed::last(b, &t[7..8])])
            .unwrap();
        let d = model.open();
        let expect = model
            .step(&[Feed::last(d, &[&t[..6], &t[7..8]].concat())])
            .unwrap();
        assert!(kind.agree(&out[1], &expect[0]), "{kind}: the fork");
        // Truncating `a` back to 6 and feeding what `b` got gives `b`'s logits.
        model.truncate(a, 6).unwrap();
        assert_eq!(model.position(a).unwrap(), 6);
        assert_eq!(model.position(b).unwrap(), 7);
        let again = model.step(&[Feed::last(a, &t[7..8])]).unwrap();
        assert!(kind.agree(&again[0], &out[1]), "{kind}: truncate then feed");
        // A closed handle is unknown, and its slot is reused.
        model.close(b);
        assert!(matches!(model.position(b), Err(Error::UnknownSequence(s)) if s == b));
        assert!(matches!(model.fork(b), Err(Error::UnknownSequence(_))));
        let reused = model.open();
        assert_eq!(model.position(reused).unwrap(), 0);
    }
}

/// The logits of the last of `history` fed to a new sequence in one pass.
fn fresh(model: &mut LoadedModel, history: &[u32]) -> Vec<f32> {
    let s = model.open();
    let out = model.step(&[Feed::last(s, history)]).unwrap().remove(0);
    model.close(s);
    out
}

/// Feeds `tokens` to sequence `seqs[i]` for each `(i, tokens)` in one step, and checks each
/// one's logits against a new sequence fed its whole history (`histories[i]`, extended).
fn step_and_check(
    run: Run,
    model: &mut LoadedModel,
    seqs: &[SeqId],
    histories: &mut [Vec<u32>],
    feeds: &[(usize, Vec<u32>)],
    what: &str,
) {
    let steps: Vec<Feed<'_>> = feeds
        .iter()
        .map(|(i, tokens)| Feed::last(seqs[*i], tokens))
        .collect();
    let out = model.step(&steps).unwrap();
    for ((i, tokens), got) in feeds.iter().zip(out) {
        histories[*i].extend(tokens);
        let want = fresh(model, &histories[*i]);
        assert!(
            run.agree(&got, &want),
            "{what}: sequence {i} differs by {}",
            max_abs_diff(&got, &want)
        );
    }
}

/// Forks hold their prompt's keys and values once, shared (attention reads them once for all
/// the forks in a step), and each still gets the bits of a new sequence fed its whole
/// history: forks advancing by different tokens beside a sequence of its own, a fork of a
/// fork, a chunk of nine tokens on a fork (the blocked attention path), and a fork cut back
/// into the shared prompt.
#[test]
fn forks_sharing_a_prompt_get_the_bits_of_a_fresh_sequence() {
    for name in FIXTURES {
        let t = fixture(name).expected.tokens;
        let token = |i: usize| t[i % t.len()];
        for kind in RUNS {
            let mut model = load(name, kind);
            let root = prefilled(&mut model, &[&t[..5]])[0];
            let mut seqs = vec![root];
            seqs.extend((0..4).map(|_| model.fork(root).unwrap()));
            let lone = prefilled(&mut model, &[&t[2..9]])[0];
            seqs.push(lone);
            let mut histories: Vec<Vec<u32>> = vec![t[..5].to_vec(); 5];
            histories.push(t[2..9].to_vec());
            for round in 0..3 {
                let feeds: Vec<(usize, Vec<u32>)> =
                    (0..6).map(|i| (i, vec![token(3 * i + round)])).collect();
                step_and_check(
                    kind,
                    &mut model,
                    &seqs,
                    &mut histories,
                    &feeds,
                    &format!("{name} on {kind}, round {round}"),
                );
            }
            let child = model.fork(seqs[1]).unwrap();
            seqs.push(child);
            histories.push(histories[1].clone());
            let feeds = [
                (6, vec![token(1)]),
                (1, vec![token(2)]),
                (2, vec![token(3)]),
            ];
            let what = format!("{name} on {kind}, a fork of a fork");
            step_and_check(kind, &mut model, &seqs, &mut histories, &feeds, &what);
            let chunk: Vec<u32> = (0..9).map(|i| token(i + 4)).collect();
            let feeds = [(3, chunk), (4, vec![token(5)])];
            let what = format!("{name} on {kind}, a chunk");
            step_and_check(kind, &mut model, &seqs, &mut histories, &feeds, &what);
            model.truncate(seqs[2], 3).unwrap();
            histories[2].truncate(3);
            let feeds = [(2, vec![token(7)]), (0, vec![token(8)])];
            let what = format!("{name} on {kind}, a cut");
            step_and_check(kind, &mut model, &seqs, &mut histories, &feeds, &what);
        }
    }
}

#[test]
fn a_bad_step_changes_no_sequence() {
    let name = FIXTURES[0];
    let t = fixture(name).expected.tokens;
    let mut model = load(name, RUNS[1]);
    let a = prefilled(&mut model, &[&t[..3]])[0];
    let vocab = model.vocab_size() as u32;
    let context = model.context_len();
    let long = vec![1u32; context];
    let unknown = SeqId(999);
    for (feeds, what) in [
        (
            vec![Feed::last(a, &t[3..4]), Feed::last(unknown, &t[..1])],
            "unknown",
        ),
        (
            vec![Feed::last(a, &t[3..4]), Feed::last(a, &t[4..5])],
            "duplicate",
        ),
        (vec![Feed::last(a, &t[3..4]), Feed::last(a, &[])], "empty"),
        (vec![Feed::last(a, &[vocab])], "out of range"),
        (vec![Feed::last(a, &long)], "too long"),
    ] {
        let err = model.step(&feeds);
        assert!(err.is_err(), "{what}");
        assert_eq!(model.position(a).unwrap(), 3, "{what}");
        if what == "duplicate" {
            assert!(matches!(err, Err(Error::DuplicateSequence(s)) if s == a));
        }
    }
    assert_eq!(model.step(&[]).unwrap(), Vec::<Vec<f32>>::new());
}

#[test]
fn a_decode_step_reads_every_weight_but_the_embedding_rows() {
    for name in FIXTURES {
        let dir = ModelDir::open(common::fixture_dir(name)).unwrap();
        let config = dir.transformer_config().clone();
        let checkpoint = dir.checkpoint().unwrap();
        let mut total = 0;
        for (_, tensor, shape) in checkpoint.shapes() {
            total += shape.iter().product::<usize>();
            // An untied model reads `lm_head` in full and one row of the embedding.
            if tensor == "model.embed_tokens.weight" && !config.embedding.tied {
                total -= shape.iter().product::<usize>();
            }
        }
        assert_eq!(config.weights_read_per_token(), total, "{name}");
    }
}
