"""sieve.vllm.SieveLogitsProcessor under Model Runner V2's interface, against a fake shaped
like vLLM 0.32's (`add_request(slot, params)` with recycled slots; `apply(logits, ctx)` with
rows reordered every step, `ctx.idx_mapping_np` row -> slot, `ctx.pos`; the history in
`req_states.all_token_ids.gpu[slot, :pos + 1]`, the prompt length in `req_states.prompt_len.np`).
vLLM's CPU build cannot run Model Runner V2 (it needs Triton), so only this fake runs it.
Each request must get the tokens it gets alone under the V1 interface."""

from __future__ import annotations

import random
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sieve import vllm as sv  # noqa: E402

import test_vllm_fake as v1  # noqa: E402

MAX_REQS, MAX_LEN = 4, 64


def fake_states():
    return types.SimpleNamespace(
        device=torch.device("cpu"),
        max_num_reqs=MAX_REQS,
        vocab_size=v1.VOCAB,
        all_token_ids=types.SimpleNamespace(gpu=torch.zeros(MAX_REQS, MAX_LEN, dtype=torch.int32)),
        prompt_len=types.SimpleNamespace(np=np.zeros(MAX_REQS, dtype=np.int32)),
        total_len=types.SimpleNamespace(gpu=torch.zeros(MAX_REQS, dtype=torch.int32)),
    )


def run_v2(specs, seed):
    states = fake_states()
    proc = sv.SieveLogitsProcessor(None, states)
    assert proc.v2
    waiting = v1.make_requests(specs)
    free = list(range(MAX_REQS))
    active = {}  # slot -> Req
    done = []
    rng = random.Random(seed)
    while waiting or active:
        for slot, r in list(active.items()):
            if len(r.output) >= r.n:
                done.append(r)
                del active[slot]
                free.append(slot)  # recycled
        while waiting and free and rng.random() < 0.7:
            slot = free.pop(rng.randrange(len(free)))
            r = waiting.pop(0)
            active[slot] = r
            states.all_token_ids.gpu[slot].zero_()
            states.all_token_ids.gpu[slot, : len(r.prompt)] = torch.tensor(r.prompt)
            states.prompt_len.np[slot] = len(r.prompt)
            states.total_len.gpu[slot] = len(r.prompt)
            r.used = proc.add_request(slot, r.params)
        if not active:
            continue
        order = list(active)
        rng.shuffle(order)  # rows are reordered every step
        x = torch.from_numpy(np.stack([v1.logits_for(active[s].rid, len(active[s].output)) for s in order]))
        pos = torch.tensor([int(states.total_len.gpu[s]) - 1 for s in order])
        ctx = types.SimpleNamespace(
            idx_mapping_np=np.array(order, dtype=np.int32),
            idx_mapping=torch.tensor(order),
            expanded_idx_mapping=torch.tensor(order),
            expanded_local_pos=torch.zeros(len(order), dtype=torch.long),
            pos=pos,
        )
        proc.apply_staged_writes()
        out = proc.apply(x, ctx)
        for row, s in enumerate(order):
            r = active[s]
            t = int(torch.argmax(out[row]))
            r.seen.append(out[row].numpy().copy())
            r.output.append(t)
            n = int(states.total_len.gpu[s])
            states.all_token_ids.gpu[s, n] = t
            states.total_len.gpu[s] = n + 1
    return sorted(done, key=lambda r: r.rid)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_request_equals_the_request_run_alone_under_v1(seed):
    done = run_v2(v1.SPECS, seed)
    assert len(done) == len(v1.SPECS)
    for r, spec in zip(done, v1.SPECS):
        assert r.used == (spec[0] is not None)
        assert r.output == v1.alone(spec, r.rid).output, f"request {r.rid}"
        if spec[0] is None:
            for step, row in enumerate(r.seen):
                np.testing.assert_array_equal(row, v1.logits_for(r.rid, step))


def test_draft_rows_pass_through():
    states = fake_states()
    proc = sv.SieveLogitsProcessor(None, states)
    states.all_token_ids.gpu[0, :2] = torch.tensor([1, 5])
    states.prompt_len.np[0] = 2
    assert proc.add_request(0, v1.params("greedy"))
    x = torch.from_numpy(np.stack([v1.logits_for(0, 0), v1.logits_for(0, 1)]))
    orig = x.clone()
    ctx = types.SimpleNamespace(
        idx_mapping_np=np.array([0], dtype=np.int32),
        expanded_idx_mapping=torch.tensor([0, 0]),
        expanded_local_pos=torch.tensor([0, 1]),
        pos=torch.tensor([1, 2]),
    )
    out = proc.apply(x, ctx)
    assert torch.isfinite(out[0]).sum() == 1
    assert torch.equal(out[1], orig[1])
