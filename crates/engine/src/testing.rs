//! A weightless [`BatchModel`] for tests of the engine and of what is built on it (the
//! scheduler, the server): [`HashModel`]. Enabled by the `testing` feature (a
//! dev-dependency of the crates that use it).

use std::collections::BTreeMap;

use crate::{BatchModel, Error, Feed, LogitsAt, Result, SeqId};

/// A [`BatchModel`] without weights: the logits after a history are a fixed pseudo-random
/// function of the whole history (a 64-bit hash of it, mixed with each token id), scaled by
/// `sharpness`. Sequences are plain token lists, so fork, truncate and batching are exact by
/// construction, and every step is counted.
#[derive(Debug, Clone)]
pub struct HashModel {
    /// Logits row length.
    pub vocab: usize,
    /// The context length.
    pub context: usize,
    /// Logits are uniform in `[-sharpness, sharpness)`.
    pub sharpness: f32,
    /// A different `salt` is a different model over the same vocabulary (a draft).
    pub salt: u64,
    /// How many times `step` ran.
    pub steps: usize,
    /// How many feeds each `step` had, in order.
    pub feeds: Vec<usize>,
    /// The step (counted from 0, as `steps`) that fails with [`Error::Model`], if any.
    pub fail_at: Option<usize>,
    seqs: BTreeMap<u32, Vec<u32>>,
    next: u32,
}

impl HashModel {
    /// A model over `vocab` tokens with a 1024-token context.
    pub fn new(vocab: usize, sharpness: f32, salt: u64) -> Self {
        HashModel {
            vocab,
            context: 1024,
            sharpness,
            salt,
            steps: 0,
            feeds: Vec::new(),
            fail_at: None,
            seqs: BTreeMap::new(),
            next: 0,
        }
    }

    /// The same model with a `context`-token context.
    pub fn with_context(self, context: usize) -> Self {
        HashModel { context, ..self }
    }

    /// The logits after `history`.
    pub fn logits_after(&self, history: &[u32]) -> Vec<f32> {
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ self.salt;
        for &t in history {
            h = (h ^ u64::from(t)).wrapping_mul(0x0100_0000_01b3);
        }
        (0..self.vocab as u64)
            .map(|id| {
                let mut x = h ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                x ^= x >> 33;
                x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
                x ^= x >> 33;
                let unit = (x >> 40) as f32 / (1u64 << 24) as f32;
                (2.0 * unit - 1.0) * self.sharpness
            })
            .collect()
    }

    /// The tokens `seq` holds.
    pub fn tokens(&self, seq: SeqId) -> &[u32] {
        &self.seqs[&seq.0]
    }
}

impl BatchModel for HashModel {
    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn context_len(&self) -> usize {
        self.context
    }

    fn open(&mut self) -> SeqId {
        self.next += 1;
        self.seqs.insert(self.next, Vec::new());
        SeqId(self.next)
    }

    fn fork(&mut self, seq: SeqId) -> Result<SeqId> {
        let tokens = self
            .seqs
            .get(&seq.0)
            .cloned()
            .ok_or(Error::UnknownSequence(seq))?;
        self.next += 1;
        self.seqs.insert(self.next, tokens);
        Ok(SeqId(self.next))
    }

    fn close(&mut self, seq: SeqId) {
        self.seqs.remove(&seq.0);
    }

    fn position(&self, seq: SeqId) -> Result<usize> {
        self.seqs
            .get(&seq.0)
            .map(Vec::len)
            .ok_or(Error::UnknownSequence(seq))
    }

    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        self.seqs
            .get_mut(&seq.0)
            .ok_or(Error::UnknownSequence(seq))?
            .truncate(len);
        Ok(())
    }

    fn step(&mut self, feeds: &[Feed<'_>]) -> Result<Vec<Vec<f32>>> {
        if self.fail_at == Some(self.steps) {
            return Err(Error::Model("the step set to fail".into()));
        }
        for (i, feed) in feeds.iter().enumerate() {
            let held = self.position(feed.seq)?;
            if let Some(&bad) = feed.tokens.iter().find(|&&t| t as usize >= self.vocab) {
                return Err(Error::Model(format!("token {bad} is out of range").into()));
            }
            if feed.tokens.is_empty() {
                return Err(Error::EmptyPrompt);
            }
            if feeds[..i].iter().any(|f| f.seq == feed.seq) {
                return Err(Error::DuplicateSequence(feed.seq));
            }
            if held + feed.tokens.len() > self.context {
                return Err(Error::ContextOverflow {
                    tokens: held + feed.tokens.len(),
                    context: self.context,
                });
            }
        }
        self.steps += 1;
        self.feeds.push(feeds.len());
        let mut out = Vec::with_capacity(feeds.len());
        for feed in feeds {
            let mut history = self.seqs[&feed.seq.0].clone();
            let mut rows = Vec::new();
            for (i, &t) in feed.tokens.iter().enumerate() {
                history.push(t);
                if feed.logits == LogitsAt::All || i + 1 == feed.tokens.len() {
                    rows.extend(self.logits_after(&history));
                }
            }
            self.seqs.insert(feed.seq.0, history);
            out.push(rows);
        }
        Ok(out)
    }
}
