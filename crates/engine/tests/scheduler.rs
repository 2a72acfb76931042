//! The continuous-batching scheduler on a weightless model: every choice gives exactly the
//! tokens of a plain run with its pipeline whatever runs beside it, prompts prefilled in
//! chunks, `n` choices forked from one prompt, cancellation frees sequences at once, the
//! queue bound, and failures confined to their own request.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::{HashModel, Letters};
use sieve_core::{Candidates, Context, Pipeline, Sampler};
use sieve_engine::scheduler::{
    logprobs, ChannelSink, Event, FailureCause, LogprobMode, LogprobsSpec, Request, Scheduler,
    SchedulerConfig, Status,
};
use sieve_engine::{
    generate, BatchModel, BoxError, Error, Feed, FinishReason, GenerateOptions, Result, SeqId,
    Sequence, StopStrings,
};
use sieve_samplers::dist::Dist;
use sieve_samplers::temp::Temp;

const VOCAB: usize = 20;
const WAIT: Duration = Duration::from_secs(20);

fn sampling(seed: u64) -> Pipeline {
    Pipeline::new(vec![
        ("temp".to_string(), Box::new(Temp::new(0.9))),
        ("dist".to_string(), Box::new(Dist::new(seed))),
    ])
}

/// A [`HashModel`] that counts the sequences it holds, and fails any step feeding `poison`.
struct Counted {
    inner: HashModel,
    held: Arc<AtomicUsize>,
    poison: u32,
}

impl Counted {
    fn new(held: &Arc<AtomicUsize>) -> Self {
        Counted {
            inner: HashModel::new(VOCAB, 3.0, 0),
            held: Arc::clone(held),
            poison: u32::MAX,
        }
    }
}

impl BatchModel for Counted {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn context_len(&self) -> usize {
        self.inner.context_len()
    }
    fn open(&mut self) -> SeqId {
        self.held.fetch_add(1, Ordering::SeqCst);
        self.inner.open()
    }
    fn fork(&mut self, seq: SeqId) -> Result<SeqId> {
        let forked = self.inner.fork(seq)?;
        self.held.fetch_add(1, Ordering::SeqCst);
        Ok(forked)
    }
    fn close(&mut self, seq: SeqId) {
        if self.inner.position(seq).is_ok() {
            self.held.fetch_sub(1, Ordering::SeqCst);
        }
        self.inner.close(seq);
    }
    fn position(&self, seq: SeqId) -> Result<usize> {
        self.inner.position(seq)
    }
    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        self.inner.truncate(seq, len)
    }
    fn step(&mut self, feeds: &[Feed<'_>]) -> Result<Vec<Vec<f32>>> {
        if feeds.iter().any(|f| f.tokens.contains(&self.poison)) {
            return Err(Error::Model("poisoned token".into()));
        }
        self.inner.step(feeds)
    }
}

/// What came back for one request.
#[derive(Debug, Default, Clone, PartialEq)]
struct Outcome {
    tokens: Vec<Vec<u32>>,
    texts: Vec<String>,
    finish: Vec<Option<FinishReason>>,
    logprobs: Vec<Vec<f32>>,
    failed: Option<String>,
    cause: Option<FailureCause>,
}

/// Reads events until every one of the `n` choices finished or the request failed.
fn collect(receiver: &mpsc::Receiver<Event>, n: usize) -> Outcome {
    let mut out = Outcome {
        tokens: vec![Vec::new(); n],
        texts: vec![String::new(); n],
        finish: vec![None; n],
        logprobs: vec![Vec::new(); n],
        failed: None,
        cause: None,
    };
    while out.finish.iter().any(Option::is_none) {
        match receiver.recv_timeout(WAIT).expect("an event") {
            Event::Token {
                choice,
                token,
                text,
                logprobs,
            } => {
                out.tokens[choice].push(token);
                out.texts[choice].push_str(&text);
                if let Some(lp) = logprobs {
                    out.logprobs[choice].push(lp.logprob);
                }
            }
            Event::Finished {
                choice,
                text,
                reason,
                tokens,
            } => {
                out.texts[choice].push_str(&text);
                assert_eq!(tokens, out.tokens[choice].len());
                out.finish[choice] = Some(reason);
            }
            Event::Failed { message, cause } => {
                out.failed = Some(message);
                out.cause = Some(cause);
                return out;
            }
        }
    }
    out
}

#[derive(Clone)]
struct Spec {
    prompt: Vec<u32>,
    seed: u64,
    n: usize,
    max_tokens: usize,
    stop: Vec<String>,
    eos: Vec<u32>,
}

impl Spec {
    fn request(&self, sink: ChannelSink) -> Request {
        Request {
            prompt: self.prompt.clone(),
            pipelines: (0..self.n)
                .map(|i| sampling(self.seed + i as u64))
                .collect(),
            max_tokens: self.max_tokens,
            stop: StopStrings::new(&self.stop).unwrap(),
            eos: self.eos.clone(),
            logprobs: None,
            show_special: false,
            sink: Box::new(sink),
        }
    }

    /// What plain runs give for each choice.
    fn alone(&self) -> Outcome {
        let mut out = Outcome::default();
        for i in 0..self.n {
            let mut model = HashModel::new(VOCAB, 3.0, 0);
            let seq = model.open();
            let mut one = Sequence::new(&mut model, seq).unwrap();
            let options = GenerateOptions {
                max_tokens: self.max_tokens,
                stop: self.stop.clone(),
                eos: self.eos.clone(),
                ..Default::default()
            };
            let g = generate(
                &mut one,
                &Letters,
                &mut sampling(self.seed + i as u64),
                &self.prompt,
                &options,
                &mut |_| {},
            )
            .unwrap();
            out.tokens.push(g.tokens);
            out.texts.push(g.text);
            out.finish.push(Some(g.finish));
            out.logprobs.push(Vec::new());
        }
        out
    }
}

fn start(config: SchedulerConfig, held: &Arc<AtomicUsize>) -> Scheduler {
    let held = Arc::clone(held);
    Scheduler::start(
        move || Ok::<_, BoxError>(Counted::new(&held)),
        Arc::new(Letters),
        None,
        config,
    )
    .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn specs() -> Vec<Spec> {
    (0..12u64)
        .map(|r| Spec {
            prompt: (0..(1 + r * 5 % 23))
                .map(|t| ((t * 7 + r) % 19) as u32)
                .collect(),
            seed: 100 + r * 10,
            n: 1 + (r % 3) as usize,
            max_tokens: 5 + (r * 3 % 17) as usize,
            stop: if r % 4 == 1 { vec!["q".into()] } else { vec![] },
            eos: if r % 3 == 2 { vec![5] } else { vec![] },
        })
        .collect()
}

#[test]
fn every_choice_equals_a_plain_run_whatever_runs_beside_it() {
    for (parallel, chunk) in [(1, 512), (4, 3), (16, 1), (16, 512)] {
        let held = Arc::new(AtomicUsize::new(0));
        let config = SchedulerConfig {
            parallel: parallel.max(3),
            max_queue: 64,
            prefill_chunk: chunk,
        };
        let scheduler = start(config, &held);
        let specs = specs();
        let receivers: Vec<_> = specs
            .iter()
            .map(|s| {
                let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
                scheduler.submit(s.request(sink)).unwrap();
                rx
            })
            .collect();
        for (s, rx) in specs.iter().zip(&receivers) {
            let got = collect(rx, s.n);
            assert_eq!(got.failed, None);
            let want = s.alone();
            assert_eq!(
                got.tokens, want.tokens,
                "parallel {parallel}, chunk {chunk}"
            );
            assert_eq!(got.texts, want.texts);
            assert_eq!(got.finish, want.finish);
        }
        wait_until("every sequence is closed", || {
            held.load(Ordering::SeqCst) == 0 && scheduler.running() == 0
        });
        assert_eq!(scheduler.waiting(), 0);
        scheduler.shutdown();
    }
}

#[test]
fn a_cancelled_request_frees_its_sequences_at_once() {
    let held = Arc::new(AtomicUsize::new(0));
    let scheduler = start(SchedulerConfig::default(), &held);
    let long = Spec {
        prompt: vec![1, 2, 3],
        seed: 7,
        n: 3,
        max_tokens: 1000,
        stop: vec![],
        eos: vec![],
    };
    let short = Spec {
        max_tokens: 30,
        n: 1,
        ..long.clone()
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let (sink, rx) = ChannelSink::new(Arc::clone(&cancel));
    scheduler.submit(long.request(sink)).unwrap();
    let (sink, short_rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(short.request(sink)).unwrap();
    // Wait for tokens of the long request, then cancel it.
    for _ in 0..6 {
        assert!(matches!(rx.recv_timeout(WAIT), Ok(Event::Token { .. })));
    }
    cancel.store(true, Ordering::SeqCst);
    assert_eq!(collect(&short_rx, 1).tokens, short.alone().tokens);
    wait_until("the cancelled choices are closed", || {
        held.load(Ordering::SeqCst) == 0 && scheduler.running() == 0
    });
    // The receiver got no Finished: the request ended by cancellation.
    assert!(rx.try_iter().all(|e| !matches!(e, Event::Finished { .. })));

    // Dropping the receiver cancels too.
    let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(long.request(sink)).unwrap();
    assert!(matches!(rx.recv_timeout(WAIT), Ok(Event::Token { .. })));
    drop(rx);
    wait_until("the dropped request is closed", || {
        held.load(Ordering::SeqCst) == 0
    });
    scheduler.shutdown();
}

#[test]
fn the_queue_is_bounded_and_refuses_at_once() {
    let held = Arc::new(AtomicUsize::new(0));
    let (open_gate, gate) = mpsc::channel::<()>();
    let model_held = Arc::clone(&held);
    let scheduler = Scheduler::start(
        move || {
            // Requests queue while the model loads.
            let _ = gate.recv();
            Ok::<_, BoxError>(Counted::new(&model_held))
        },
        Arc::new(Letters),
        None,
        SchedulerConfig {
            parallel: 2,
            max_queue: 3,
            prefill_chunk: 512,
        },
    )
    .unwrap();
    assert_eq!(scheduler.status(), Status::Loading);
    let spec = Spec {
        prompt: vec![4, 2],
        seed: 1,
        n: 1,
        max_tokens: 4,
        stop: vec![],
        eos: vec![],
    };
    let mut receivers = Vec::new();
    for _ in 0..3 {
        let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
        scheduler.submit(spec.request(sink)).unwrap();
        receivers.push(rx);
    }
    assert_eq!(scheduler.waiting(), 3);
    let (sink, _rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    let refused = scheduler.submit(spec.request(sink)).unwrap_err();
    assert!(
        matches!(refused, Error::QueueFull { capacity: 3 }),
        "{refused}"
    );
    let (sink, _rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    let too_many = Spec { n: 3, ..spec };
    assert!(matches!(
        scheduler.submit(too_many.request(sink)),
        Err(Error::Choices { n: 3, parallel: 2 })
    ));
    open_gate.send(()).unwrap();
    assert_eq!(scheduler.wait_ready(WAIT).unwrap(), Status::Ready);
    let spec = Spec { n: 1, ..too_many };
    for rx in &receivers {
        assert_eq!(collect(rx, 1).tokens, spec.alone().tokens);
    }
    wait_until("the queue is empty", || scheduler.waiting() == 0);
    let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(spec.request(sink)).unwrap();
    assert_eq!(collect(&rx, 1).failed, None);
    scheduler.shutdown();
}

/// A stage that fails at its `fail_at`-th step.
struct Fails {
    steps: usize,
    fail_at: usize,
}

impl Sampler for Fails {
    fn apply(
        &mut self,
        _: &mut Candidates,
        _: &Context<'_>,
    ) -> std::result::Result<(), sieve_core::Error> {
        self.steps += 1;
        if self.steps == self.fail_at {
            return Err(sieve_core::Error::Stage {
                stage: "fails".into(),
                message: "as planned".into(),
            });
        }
        Ok(())
    }
    fn reset(&mut self) {
        self.steps = 0;
    }
}

#[test]
fn failures_stay_in_their_own_request() {
    let held = Arc::new(AtomicUsize::new(0));
    let model_held = Arc::clone(&held);
    let scheduler = Scheduler::start(
        move || {
            let mut model = Counted::new(&model_held);
            model.poison = 99;
            Ok::<_, BoxError>(model)
        },
        Arc::new(Letters),
        None,
        SchedulerConfig::default(),
    )
    .unwrap();
    let good = Spec {
        prompt: vec![1, 2, 3, 4],
        seed: 3,
        n: 2,
        max_tokens: 20,
        stop: vec![],
        eos: vec![],
    };
    let (sink, good_rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(good.request(sink)).unwrap();
    // A prompt the model refuses.
    let poisoned = Spec {
        prompt: vec![1, 99, 2],
        n: 1,
        ..good.clone()
    };
    let (sink, bad_rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(poisoned.request(sink)).unwrap();
    // A stage that fails at its third step.
    let (sink, stage_rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    let mut request = good.request(sink);
    request.pipelines = vec![Pipeline::new(vec![
        (
            "fails".to_string(),
            Box::new(Fails {
                steps: 0,
                fail_at: 3,
            }),
        ),
        ("dist".to_string(), Box::new(Dist::new(1))),
    ])];
    scheduler.submit(request).unwrap();
    let bad = collect(&bad_rx, 1);
    assert!(
        bad.failed.as_deref().unwrap().contains("poisoned"),
        "{bad:?}"
    );
    // The model's failure is the server's; the pipeline's is the request's.
    assert_eq!(bad.cause, Some(FailureCause::Server));
    let staged = collect(&stage_rx, 1);
    assert!(
        staged.failed.as_deref().unwrap().contains("as planned"),
        "{staged:?}"
    );
    assert_eq!(staged.cause, Some(FailureCause::Request));
    assert_eq!(staged.tokens[0].len(), 2);
    let got = collect(&good_rx, 2);
    assert_eq!(got.failed, None);
    assert_eq!(got.tokens, good.alone().tokens);
    wait_until("every sequence is closed", || {
        held.load(Ordering::SeqCst) == 0
    });
    scheduler.shutdown();
}

#[test]
fn nothing_to_generate_and_prompts_too_long() {
    let held = Arc::new(AtomicUsize::new(0));
    let scheduler = start(SchedulerConfig::default(), &held);
    scheduler.wait_ready(WAIT).unwrap();
    let spec = Spec {
        prompt: vec![1],
        seed: 0,
        n: 2,
        max_tokens: 0,
        stop: vec![],
        eos: vec![],
    };
    let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(spec.request(sink)).unwrap();
    let got = collect(&rx, 2);
    assert_eq!(got.finish, [Some(FinishReason::Length); 2]);
    assert_eq!(got.tokens, [Vec::<u32>::new(), Vec::new()]);
    let long = Spec {
        prompt: vec![1; 1025],
        max_tokens: 3,
        ..spec
    };
    let (sink, _rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    assert!(matches!(
        scheduler.submit(long.request(sink)),
        Err(Error::ContextOverflow {
            tokens: 1025,
            context: 1024
        })
    ));
    // A prompt that fills the context: one token, ended by the context.
    let full = Spec {
        prompt: vec![1; 1023],
        max_tokens: 10,
        n: 1,
        ..long.clone()
    };
    let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    scheduler.submit(full.request(sink)).unwrap();
    let got = collect(&rx, 1);
    assert_eq!(got.finish, [Some(FinishReason::Length)]);
    assert_eq!(got.tokens, full.alone().tokens);
    scheduler.shutdown();
}

#[test]
fn logprobs_are_the_model_s_or_the_pipeline_s() {
    let held = Arc::new(AtomicUsize::new(0));
    let scheduler = start(SchedulerConfig::default(), &held);
    let spec = Spec {
        prompt: vec![2, 7],
        seed: 9,
        n: 1,
        max_tokens: 6,
        stop: vec![],
        eos: vec![],
    };
    let want = spec.alone();
    let reference = HashModel::new(VOCAB, 3.0, 0);
    for mode in [LogprobMode::Raw, LogprobMode::Processed] {
        let (sink, rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
        let mut request = spec.request(sink);
        request.logprobs = Some(LogprobsSpec { top: 3, mode });
        scheduler.submit(request).unwrap();
        let got = collect(&rx, 1);
        assert_eq!(got.tokens, want.tokens);
        let mut history = spec.prompt.clone();
        for (&token, &lp) in got.tokens[0].iter().zip(&got.logprobs[0]) {
            let mut logits = reference.logits_after(&history);
            if mode == LogprobMode::Processed {
                // temp(0.9) is the pipeline's only transform.
                for l in &mut logits {
                    *l /= 0.9;
                }
            }
            let expected = logprobs::from_logits(&logits, token, 0).logprob;
            assert!((lp - expected).abs() < 1e-5, "{mode:?}: {lp} vs {expected}");
            history.push(token);
        }
    }
    scheduler.shutdown();
}

#[test]
fn a_model_that_does_not_load_stops_the_scheduler() {
    let scheduler = Scheduler::start(
        || Err::<HashModel, BoxError>("no weights".into()),
        Arc::new(Letters),
        None,
        SchedulerConfig::default(),
    )
    .unwrap();
    let e = scheduler.wait_ready(WAIT).unwrap_err();
    assert!(e.to_string().contains("no weights"), "{e}");
    let (sink, _rx) = ChannelSink::new(Arc::new(AtomicBool::new(false)));
    let spec = Spec {
        prompt: vec![1],
        seed: 0,
        n: 1,
        max_tokens: 1,
        stop: vec![],
        eos: vec![],
    };
    assert!(matches!(
        scheduler.submit(spec.request(sink)),
        Err(Error::Stopped(_))
    ));
}
