"""``sieve.Batch``: many sequences stepped at once over a ``[rows, vocab]`` array."""

from __future__ import annotations

import os
from itertools import chain
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _arrays, _native
from ._errors import SamplingError, SieveError
from ._pipeline import Pipeline
from ._vocab import as_vocab

_EMPTY = np.zeros(0, dtype=np.uint32)


def raise_row_errors(errors: Sequence[tuple]) -> None:
    """Raises the first of ``step_rows``' failed rows (``ValueError`` for bad input,
    ``SamplingError`` for a stage that failed, ``SieveError`` for an internal error), naming
    its row. The other rows were stepped."""
    if not errors:
        return
    row, kind, message = errors[0]
    text = f"row {row}: {message}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more failed rows)"
    if kind == "input":
        raise ValueError(text)
    if kind == "sampling":
        raise SamplingError(text)
    raise SieveError(text)


def default_threads() -> int:
    """``SIEVE_THREADS`` if set, else the number of CPUs this process may use."""
    env = os.environ.get("SIEVE_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Batch:
    """One pipeline per row (or ``None``: the row is passed through), stepped together.

    ``step`` runs every row's pipeline on its row of a ``[rows, vocab]`` float32 array in
    parallel threads with the GIL released: what an engine calls once per decoding step. Each
    row's result depends on that row alone, so it is the same for any thread count.
    ``rows`` is a plain list: replace, append or remove pipelines between steps.
    """

    def __init__(self, pipelines: Sequence[Optional[Pipeline]], threads: Optional[int] = None) -> None:
        self.rows: List[Optional[Pipeline]] = list(pipelines)
        for i, p in enumerate(self.rows):
            if p is not None and not isinstance(p, Pipeline):
                raise TypeError(f"row {i}: expected a sieve.Pipeline or None, got {type(p).__name__}")
        self.threads = default_threads() if threads is None else max(1, int(threads))

    @classmethod
    def from_text(
        cls, text: str, rows: int, seed: int = 0, vocab: Any = None, threads: Optional[int] = None
    ) -> "Batch":
        """``rows`` copies of one pipeline, row ``i`` seeded ``seed + i`` (as ``sieve generate
        --num-return`` seeds its copies)."""
        vocab = as_vocab(vocab)
        seed = _arrays.seed(seed)
        return cls([Pipeline(text, (seed + i) % 2**64, vocab) for i in range(rows)], threads)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Optional[Pipeline]:
        return self.rows[i]

    def __setitem__(self, i: int, p: Optional[Pipeline]) -> None:
        self.rows[i] = p

    def step(
        self,
        logits: Any,
        histories: Any = None,
        prompt_lens: Union[None, int, Sequence[int]] = None,
        mode: str = "select",
    ) -> np.ndarray:
        """Runs row ``i``'s pipeline on ``logits[i]`` and writes the row in place:

        - ``mode="select"``: the pipeline's selector picks; the row becomes ``-inf`` except
          ``0.0`` at the chosen token (greedy, or any sampler, then takes it);
        - ``mode="distribution"``: every stage but the selector; the row holds the
          distribution as logits (``-inf`` for removed tokens), for the engine to draw from.

        ``logits``: a ``[rows, vocab]`` float32 numpy array or CPU torch tensor with unit
        column stride, written in place; anything else is copied to a new numpy array, which
        is written instead (``step`` returns the selected tokens either way; read the written
        rows with ``last_logits``). ``histories``: ``None``, a ``[rows, T]`` integer array
        (such as transformers' ``input_ids``) or one sequence of ids per row; the first
        ``prompt_lens`` (an int for all rows, one per row, default all) are the prompt.

        Returns the selected token per row as int64 (``-1`` for pass-through rows and in
        distribution mode). Nothing is accepted: call ``accept``. Rows with ``None`` are left
        as they are. A failing row is left as it was and raises ``sieve.SamplingError`` (or
        ``ValueError`` for bad input) naming the row, after every other row was stepped.
        """
        (addr, rows, vocab, stride), keep = _arrays.f32_matrix(logits)
        if rows != len(self.rows):
            raise ValueError(f"the logits have {rows} rows, the batch {len(self.rows)} pipelines")
        hists, keep_hists = self._histories(histories, rows)
        lens = self._prompt_lens(prompt_lens, hists)
        refs = [(a, size, n) for (a, size), n in zip(hists, lens)]
        natives = [None if p is None else p._native for p in self.rows]
        tokens, errors = _native.step_rows(natives, addr, rows, vocab, stride, refs, mode, self.threads)
        self.last_logits = keep
        del keep_hists
        raise_row_errors(errors)
        return np.asarray(tokens, dtype=np.int64)

    def apply(self, logits: Any, histories: Any = None, prompt_lens: Union[None, int, Sequence[int]] = None) -> np.ndarray:
        """The token each row's pipeline selects, leaving ``logits`` untouched (``step`` in
        select mode on a copy)."""
        copy = np.array(logits.detach().cpu().numpy() if _arrays._is_torch(logits) else logits, dtype=np.float32)
        return self.step(copy, histories, prompt_lens, "select")

    def accept(self, tokens: Sequence[int]) -> None:
        """Passes ``tokens[i]`` to row ``i``'s pipeline (negative ids and ``None`` rows are
        skipped)."""
        if len(tokens) != len(self.rows):
            raise ValueError(f"{len(tokens)} tokens for {len(self.rows)} rows")
        for p, t in zip(self.rows, tokens):
            if p is not None and int(t) >= 0:
                p.accept(int(t))

    def reset(self) -> None:
        """Resets every row's pipeline."""
        for p in self.rows:
            if p is not None:
                p.reset()

    @staticmethod
    def _histories(histories: Any, rows: int) -> Tuple[List[Tuple[int, int]], Any]:
        """(address, length) of each row's uint32 history, and the object to keep alive for
        the call. An array is converted once and its rows addressed within it; lists of ids
        are converted together, in one array (one row at a time only to name a bad one)."""
        if histories is None:
            return [(0, 0)] * rows, None
        if _arrays._is_torch(histories) or isinstance(histories, np.ndarray):
            a = _arrays.tokens(histories, "histories")
            if a.ndim != 2 or a.shape[0] != rows:
                raise ValueError(f"histories must be [rows={rows}, T], got shape {a.shape}")
            base, step, width = a.ctypes.data, a.strides[0], a.shape[1]
            return [(base + i * step, width) for i in range(rows)], a
        if len(histories) != rows:
            raise ValueError(f"{len(histories)} histories for {rows} rows")
        if all(isinstance(h, (list, tuple)) for h in histories):
            try:
                flat = _arrays.tokens(list(chain.from_iterable(histories)), "histories")
            except (TypeError, ValueError):
                flat = None  # the row-by-row path below names the row
            if flat is not None and flat.ndim == 1:
                base, out, at = flat.ctypes.data, [], 0
                for h in histories:
                    out.append((base + 4 * at, len(h)))
                    at += len(h)
                return out, flat
        arrays = [_arrays.tokens(h, f"history of row {i}") if len(h) else _EMPTY for i, h in enumerate(histories)]
        return [(a.ctypes.data, a.size) for a in arrays], arrays

    @staticmethod
    def _prompt_lens(prompt_lens: Union[None, int, Sequence[int]], hists: List[Tuple[int, int]]) -> List[int]:
        if prompt_lens is None:
            return [size for _, size in hists]
        if isinstance(prompt_lens, (int, np.integer)):
            return [int(prompt_lens)] * len(hists)
        if len(prompt_lens) != len(hists):
            raise ValueError(f"{len(prompt_lens)} prompt lengths for {len(hists)} rows")
        return [int(n) for n in prompt_lens]
