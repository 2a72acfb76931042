"""sieve.Batch: rows stepped together equal each pipeline stepped alone, for any thread
count; in-place writes; pass-through rows; errors naming the row."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import sieve

TEXT = "penalty(1.3) | top_k(30) | temp(1.1) | dist"


def matrix(rows, vocab=500, seed=0):
    return np.random.default_rng(seed).standard_normal((rows, vocab)).astype(np.float32) * 3


def alone(text, seeds, x, histories):
    out = []
    for r, seed in enumerate(seeds):
        p = sieve.Pipeline(text, seed)
        for t in histories[r]:
            p.accept(t)
        out.append(p.apply(x[r], histories[r]))
    return out


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_rows_equal_each_pipeline_alone_for_any_thread_count(threads):
    rows = 13
    x = matrix(rows)
    histories = [list(range(r, r + 5)) for r in range(rows)]
    batch = sieve.Batch.from_text(TEXT, rows, seed=40, threads=threads)
    for r, h in enumerate(histories):
        for t in h:
            batch[r].accept(t)
    want = alone(TEXT, [40 + r for r in range(rows)], x, histories)
    assert batch.apply(x, histories).tolist() == want


def test_a_decoding_loop_is_the_same_on_one_thread_and_many():
    def run(threads):
        batch = sieve.Batch.from_text("temp(1.4) | min_p(0.01)", 9, seed=3, threads=threads)
        hist = np.zeros((9, 0), dtype=np.int64)
        for step in range(20):
            x = matrix(9, seed=step)
            tokens = batch.step(x, hist)
            batch.accept(tokens)
            hist = np.concatenate([hist, tokens[:, None]], axis=1)
        return hist

    assert np.array_equal(run(1), run(4))


def test_histories_as_lists_arrays_or_ragged_rows_give_the_same_tokens():
    # Lists are converted together, arrays addressed row by row within one array; both must
    # reach each row's pipeline as that row's history, with None rows among them.
    x = matrix(5)
    text = "penalty(3.0) | top_k(3) | dist"
    lists = [[3, 1, 4], [1, 5], [], [9, 2, 6, 5], [3]]
    pipes = lambda: sieve.Batch([sieve.Pipeline(text, 7 + r) if r != 2 else None for r in range(5)])
    want = [p if p is not None else -1 for p in
            [sieve.Pipeline(text, 7 + r).apply(x[r], lists[r]) if r != 2 else None for r in range(5)]]
    assert pipes().apply(x, lists).tolist() == want
    assert pipes().apply(x, [np.array(h, dtype=np.int64) for h in lists]).tolist() == want
    square = np.array([[3, 1, 4], [1, 5, 5], [0, 0, 0], [9, 2, 6], [3, 3, 3]])
    want_square = [sieve.Pipeline(text, 7 + r).apply(x[r], square[r]) if r != 2 else -1 for r in range(5)]
    assert pipes().apply(x, square).tolist() == want_square
    assert pipes().apply(x, torch_or_array(square)).tolist() == want_square
    assert pipes().apply(x, square.tolist()).tolist() == want_square
    with pytest.raises(ValueError, match="history of row 3: token id -1 is negative"):
        pipes().apply(x, [[1], [2], [], [4, -1], [0]])
    with pytest.raises(ValueError, match="beyond the 500 logits"):
        pipes().apply(x, [[1], [2], [], [4, 500], [0]])


def torch_or_array(a):
    try:
        import torch
    except ImportError:
        return a
    return torch.from_numpy(a)


def test_select_writes_one_hot_rows_in_place_and_distribution_writes_the_distribution():
    x = matrix(3)
    orig = x.copy()
    batch = sieve.Batch.from_text("top_k(4) | temp(2.0) | dist", 3, seed=1)
    tokens = batch.step(x)
    for r in range(3):
        assert x[r, tokens[r]] == 0.0 and np.isfinite(x[r]).sum() == 1
    y = orig.copy()
    assert batch.step(y, mode="distribution").tolist() == [-1, -1, -1]
    for r in range(3):
        ids, probs = batch[r].probabilities(orig[r])
        row = np.exp(y[r].astype(np.float64) - y[r].max())
        row /= row.sum()
        assert set(np.flatnonzero(row > 0)) == set(ids.tolist())
        np.testing.assert_allclose(row[ids], probs, rtol=1e-5)


def test_torch_rows_are_written_in_place():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(matrix(2))
    batch = sieve.Batch.from_text("greedy", 2)
    tokens = batch.step(x)
    assert x[0, tokens[0]].item() == 0.0 and torch.isfinite(x).sum().item() == 2
    # A strided view (every other row) is written where it is.
    big = torch.from_numpy(matrix(4))
    view = big[::2]
    tokens = sieve.Batch.from_text("greedy", 2).step(view)
    assert big[2, tokens[1]].item() == 0.0 and torch.isfinite(big[1]).all()


def test_none_rows_pass_through_and_read_only_input_is_copied():
    x = matrix(3)
    orig = x.copy()
    batch = sieve.Batch([sieve.Pipeline("greedy"), None, sieve.Pipeline("greedy")])
    tokens = batch.step(x)
    assert tokens[1] == -1 and np.array_equal(x[1], orig[1])
    ro = orig.copy()
    ro.setflags(write=False)
    tokens = batch.step(ro)
    assert np.array_equal(ro, orig)  # untouched: a copy was written
    assert np.isfinite(batch.last_logits[0]).sum() == 1


def test_errors_name_the_row():
    x = matrix(3)
    x[1] = -np.inf
    batch = sieve.Batch.from_text("greedy", 3)
    with pytest.raises(sieve.SamplingError, match="row 1"):
        batch.step(x)
    # The other rows were stepped; the failed one is left as it was.
    assert np.isfinite(x[0]).sum() == 1 and np.isfinite(x[2]).sum() == 1
    assert np.isneginf(x[1]).all()
    x = matrix(3)
    x[1, 7] = np.nan
    with pytest.raises(ValueError, match="row 1: logit 7 is NaN"):
        batch.step(x)
    with pytest.raises(ValueError, match="rows"):
        batch.step(matrix(2))
    p = sieve.Pipeline("greedy")
    with pytest.raises(ValueError, match="same Pipeline"):
        sieve.Batch([p, p]).step(matrix(2))
    with pytest.raises(ValueError, match="mode"):
        batch.step(matrix(3), mode="sample")
    with pytest.raises(TypeError):
        sieve.Batch(["greedy"])


def test_threads_may_share_one_pipeline_safely():
    # Calls from several Python threads take turns on a pipeline (the GIL is released while a
    # step runs); the result equals the same number of calls made in turn.
    x = matrix(1)[0]
    p = sieve.Pipeline("temp(1.5) | dist", 9)
    got = []

    def work():
        for _ in range(50):
            got.append(p.apply(x))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q = sieve.Pipeline("temp(1.5) | dist", 9)
    want = [q.apply(x) for _ in range(200)]
    assert sorted(got) == sorted(want)
