"""``sieve.Pipeline``: one sequence's pipeline."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _arrays, _native
from ._vocab import as_vocab

_EMPTY = np.zeros(0, dtype=np.uint32)


class Pipeline:
    """One sequence's sampler pipeline, built from its text.

    ``Pipeline("penalty(1.1) | temp(0.7) | top_k(40) | dist", seed=7)``. Stages whose
    ``seed`` is ``-1`` (the default) draw from ``seed``. ``vocab`` (a ``sieve.Vocab``, a
    transformers / tokenizers tokenizer, or ``(tokens, eos_ids)`` with ``tokens`` a list of
    byte strings) lets stages name tokens by their text (``logit_bias`` strings, DRY's
    breakers, ``grammar``). Stages of plugins loaded with ``sieve.load_plugin`` before are
    known.

    The pipeline keeps state across steps (penalties, DRY, mirostat, grammars, its random
    stream): after each step call ``accept(token)`` with the token the sequence goes on with.
    Raises ``sieve.PipelineError`` (caret diagnostic) for text that does not compile.
    """

    __slots__ = ("_native",)

    def __init__(self, text: str, seed: int = 0, vocab: Any = None) -> None:
        if not isinstance(text, str):
            raise TypeError(f"the pipeline must be a str, not {type(text).__name__}")
        self._native = _native.Pipeline(text, _arrays.seed(seed), as_vocab(vocab))

    @classmethod
    def _wrap(cls, native: "_native.Pipeline") -> "Pipeline":
        p = cls.__new__(cls)
        p._native = native
        return p

    @property
    def canonical(self) -> str:
        """The pipeline in canonical form (every argument named, ``dist`` appended when the
        text ends in no selector)."""
        return self._native.canonical

    @property
    def seed(self) -> int:
        """The seed it was built with."""
        return self._native.seed

    @property
    def selector(self) -> str:
        """The name of the last stage, the one that picks the token."""
        return self._native.selector

    @property
    def accepted(self) -> list:
        """The tokens accepted since the last reset."""
        return self._native.accepted

    def apply(self, logits: Any, history: Sequence[int] = (), prompt_len: Optional[int] = None) -> int:
        """Runs every stage on ``logits`` (1-D float32 numpy array or CPU torch tensor, read
        without a copy; other numbers are converted) and returns the selected token id.

        ``history``: the tokens before this step; its first ``prompt_len`` (default: all) are
        the prompt, the rest were generated. Nothing is accepted: call ``accept``.
        Raises ``ValueError`` for NaN / +inf logits or a history token beyond the logits,
        ``sieve.SamplingError`` when a stage fails.
        """
        (addr, n), keep = _arrays.f32_vector(logits)
        hist = _arrays.tokens(history) if len(history) else _EMPTY
        token = self._native._select((addr, n), (hist.ctypes.data, hist.size), prompt_len)
        del keep
        return token

    def probabilities(
        self, logits: Any, history: Sequence[int] = (), prompt_len: Optional[int] = None
    ) -> Tuple[np.ndarray, np.ndarray]:
        """The distribution the selector would draw from: every stage but the selector runs,
        and the survivors come back as ``(ids uint32, probs float32)``, most likely first."""
        (addr, n), keep = _arrays.f32_vector(logits)
        hist = _arrays.tokens(history) if len(history) else _EMPTY
        ids, probs = self._native._probabilities((addr, n), (hist.ctypes.data, hist.size), prompt_len)
        del keep
        return np.frombuffer(ids, dtype=np.uint32), np.frombuffer(probs, dtype=np.float32)

    def accept(self, token: int) -> None:
        """Passes ``token`` (the one the sequence goes on with) to every stage."""
        self._native.accept(_arrays.token(token))

    def reset(self) -> None:
        """Back to the freshly built state: random stages replay their seed, nothing
        accepted."""
        self._native.reset()

    def fork(self, seed: int) -> "Pipeline":
        """A copy whose random stages draw from ``seed``, having accepted the same tokens (for
        a new branch: another sample, a beam)."""
        return Pipeline._wrap(self._native.fork(_arrays.seed(seed)))

    def __repr__(self) -> str:
        return repr(self._native)
