"""sieve pipelines in transformers' ``generate``: ``SieveLogitsProcessor``.

.. code-block:: python

    from sieve.transformers import SieveLogitsProcessor

    proc = SieveLogitsProcessor("penalty(1.1) | top_k(40) | temp(0.8) | dist", seed=7,
                                tokenizer=tokenizer)
    out = model.generate(**inputs, logits_processor=[proc], do_sample=False)

Two modes:

- ``mode="select"`` (default): sieve's selector picks each token with its own seeded random
  stream (mirostat included) and the processor returns a row that is ``-inf`` everywhere
  else, so ``generate(do_sample=False)`` takes exactly that token: the tokens are those
  sieve picks for the same logits and seed.
- ``mode="distribution"``: every stage but the selector runs and the row holds the
  pipeline's distribution (``-inf`` for removed tokens), for
  ``generate(do_sample=True, temperature=1.0, top_k=0, top_p=1.0)`` to draw from with torch's
  generator. (Leave transformers' own warpers neutral: its default ``top_k=50`` would cut
  the distribution again.)

Each batch row has its own pipeline (row ``i`` seeded ``seed + i``, as ``sieve generate
--num-return`` seeds its copies). The stages see the prompt (passed to ``accept`` first, as
``sieve generate`` does) and then exactly the tokens ``generate`` appends, whoever picked
them. A new ``generate`` call is detected (the batch size changes, or the tokens before the
newest one are not those of the previous call) and starts every row fresh; ``reset()`` forces
it. A row that produced an end-of-sequence id is passed through untouched from then on.
Beam search (``num_beams > 1``) reorders rows and is not supported.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Union

import numpy as np
import torch
from transformers import LogitsProcessor

from ._pipeline import Pipeline
from ._vocab import as_vocab, vocab_from_tokenizer
from .batch import Batch

__all__ = ["SieveLogitsProcessor"]


def _ids(x: Union[None, int, Iterable[int]]) -> List[int]:
    if x is None:
        return []
    if isinstance(x, (int, np.integer)):
        return [int(x)]
    return [int(i) for i in x]


class SieveLogitsProcessor(LogitsProcessor):
    """A transformers logits processor running a sieve pipeline on every row.

    ``pipeline``: the pipeline text (``PipelineError`` here if it does not compile).
    ``seed``: row ``i`` uses ``seed + i``. ``tokenizer`` (or ``vocab``, anything
    ``sieve.Pipeline`` takes) gives stages the token bytes (``logit_bias`` strings, DRY
    breakers, ``grammar``) and the EOS ids. ``eos_token_id`` overrides them. ``pad_token_id``
    (default: the tokenizer's): leading pad tokens of a left-padded row are not part of its
    history. ``threads``: rows stepped in parallel (default: every CPU).
    """

    def __init__(
        self,
        pipeline: str,
        seed: int = 0,
        tokenizer: Any = None,
        mode: str = "select",
        vocab: Any = None,
        eos_token_id: Union[None, int, Iterable[int]] = None,
        pad_token_id: Optional[int] = None,
        threads: Optional[int] = None,
    ) -> None:
        if mode not in ("select", "distribution"):
            raise ValueError(f'mode must be "select" or "distribution", not {mode!r}')
        eos = _ids(eos_token_id)
        if not eos and tokenizer is not None:
            eos = _ids(getattr(tokenizer, "eos_token_id", None))
        # From a tokenizer, the vocabulary is remade at the model's size on the first call
        # (a model's vocabulary is often larger than its tokenizer's).
        self._tokenizer = tokenizer if vocab is None else None
        self._eos_for_vocab = eos
        if vocab is None and tokenizer is not None:
            vocab = vocab_from_tokenizer(tokenizer, eos=eos)
        self.vocab = as_vocab(vocab)
        self.text = pipeline
        self.seed = seed
        self.mode = mode
        self.threads = threads
        # Compiles now, so that a mistake surfaces before generate starts.
        self.canonical = Pipeline(pipeline, seed, self.vocab).canonical
        if not eos and self.vocab is not None:
            eos = list(self.vocab.eos)
        self.eos = set(eos)
        if pad_token_id is None and tokenizer is not None:
            pad_token_id = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = pad_token_id
        self.reset()

    def reset(self) -> None:
        """Forget every row: the next call starts fresh pipelines."""
        self._batch: Optional[Batch] = None
        self._last: Optional[torch.Tensor] = None
        self._starts: List[int] = []
        self._prompt_len = 0

    def _continues(self, input_ids: torch.Tensor) -> bool:
        last = self._last
        return (
            last is not None
            and input_ids.shape[0] == last.shape[0]
            and input_ids.shape[1] == last.shape[1] + 1
            and torch.equal(input_ids[:, :-1], last)
        )

    def _start(self, input_ids: torch.Tensor, vocab_size: int) -> None:
        rows, length = input_ids.shape
        if self._tokenizer is not None and len(self.vocab) != vocab_size:
            self.vocab = vocab_from_tokenizer(self._tokenizer, eos=self._eos_for_vocab, size=vocab_size)
        self._batch = Batch.from_text(self.text, rows, self.seed, self.vocab, self.threads)
        ids = input_ids.cpu().numpy()
        self._starts = []
        for r in range(rows):
            start = 0
            if self.pad_token_id is not None:
                while start < length and ids[r, start] == self.pad_token_id:
                    start += 1
            self._starts.append(start)
            p = self._batch[r]
            for t in ids[r, start:]:
                p.accept(int(t))
        self._prompt_len = length

    def _advance(self, input_ids: torch.Tensor) -> None:
        newest = input_ids[:, -1].cpu().numpy()
        for r, t in enumerate(newest):
            p = self._batch[r]
            if p is None:
                continue
            p.accept(int(t))
            if int(t) in self.eos:
                self._batch[r] = None  # finished: pass the row through from now on

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self._continues(input_ids):
            self._advance(input_ids)
        else:
            self._start(input_ids, scores.shape[-1])
        self._last = input_ids
        device = scores.device
        # A copy: generate keeps the raw logits it passed in (output_logits=True).
        out = scores.detach().to("cpu", torch.float32, copy=True).contiguous()
        ids = input_ids.cpu()
        if any(self._starts):  # left padding: each row's history starts after its pads
            histories: Any = [ids[r, s:] for r, s in enumerate(self._starts)]
        else:
            histories = ids  # one [rows, T] array: converted once
        prompt_lens = [self._prompt_len - s for s in self._starts]
        self._batch.step(out, histories, prompt_lens, self.mode)
        return out.to(device=device, dtype=scores.dtype)
