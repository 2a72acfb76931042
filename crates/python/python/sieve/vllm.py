"""sieve pipelines in vLLM: ``SieveLogitsProcessor``, a vLLM V1 logits processor.

Register it by class path (``LLM(logits_processors=["sieve.vllm:SieveLogitsProcessor"])`` or
``--logits-processors sieve.vllm:SieveLogitsProcessor``); installing the package also
registers it under vLLM's ``vllm.logits_processors`` entry point group. Each request brings
its own pipeline:

.. code-block:: python

    SamplingParams(temperature=0.0, max_tokens=64,
                   extra_args={"sampler": "penalty(1.1) | top_k(40) | temp(0.8) | dist",
                               "seed": 7})

or, through vLLM's OpenAI server, ``"vllm_xargs": {"sampler": "...", "seed": 7}``.

- ``sampler``: the pipeline text. A request without one passes through untouched. A pipeline
  that does not compile is refused at validation (``ValueError`` with the caret diagnostic:
  HTTP 400 through the server).
- ``seed``: for the pipeline's random stages (default: the request's ``SamplingParams.seed``,
  else a random one).
- ``sampler_mode``: ``"select"`` (default) or ``"distribution"``:

  - ``select``: sieve's selector picks the token with its own seeded random stream and the row
    becomes ``-inf`` except that token, which vLLM's sampling step then takes whatever its
    own settings (greedy or not). The processor is not argmax-invariant and says so.
  - ``distribution``: every stage but the selector; the row holds the pipeline's
    distribution for vLLM to draw from. Leave vLLM's own knobs neutral for the request
    (``temperature=1.0, top_k=-1 (or 0), top_p=1.0, min_p=0``, no penalties), or they shape
    the distribution again.

Each request keeps its own stage state and random stream while it joins, leaves and moves
between batch rows; its stages see the prompt (accepted first, as ``sieve generate`` does)
and then every token vLLM appends to it. Stages that name tokens by text get the model's
vocabulary, read from the model directory's ``tokenizer.json`` (for a Hugging Face name,
from the model's snapshot in the local Hugging Face cache, where vLLM downloaded it).

The same class serves Model Runner V2 (``add_request`` / ``apply(logits, ctx)``) where the
installed vLLM has that interface: it subclasses both interfaces, so the entry point loads
under either runner.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from . import _arrays, _native
from ._errors import PipelineError
from ._pipeline import Pipeline
from ._vocab import Vocab, vocab_from_tokenizer
from .batch import default_threads

try:  # vLLM's V1 interface
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
    from vllm.v1.sample.logits_processor import MoveDirectionality
except ImportError:  # vLLM is not installed (or too old): the class still works with fakes
    _V1Base = object  # type: ignore[misc,assignment]
    MoveDirectionality = None  # type: ignore[assignment]

try:  # Model Runner V2's interface
    from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsProcessor as _V2Base
except ImportError:
    _V2Base = None

__all__ = ["SieveLogitsProcessor", "request_args", "validate"]

logger = logging.getLogger(__name__)

SAMPLER = "sampler"
SEED = "seed"
MODE = "sampler_mode"
MODES = ("select", "distribution")


def request_args(params: Any) -> Optional[Tuple[str, Optional[int], str]]:
    """The request's ``(pipeline, seed, mode)`` from ``params.extra_args``, ``None`` when it
    names no pipeline. Raises ``ValueError`` for values of the wrong type."""
    args = getattr(params, "extra_args", None) or {}
    if SAMPLER not in args or args[SAMPLER] is None:
        return None
    text = args[SAMPLER]
    if not isinstance(text, str):
        raise ValueError(f"extra_args[{SAMPLER!r}] must be a pipeline string, got {type(text).__name__}")
    seed = args.get(SEED, getattr(params, "seed", None))
    if seed is not None:
        if isinstance(seed, float) and seed.is_integer():
            seed = int(seed)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"extra_args[{SEED!r}] must be an integer in [0, 2**64), got {seed!r}")
    mode = args.get(MODE, "select")
    if mode not in MODES:
        raise ValueError(f'extra_args[{MODE!r}] must be "select" or "distribution", got {mode!r}')
    return text, seed, mode


def _needs_vocab(e: PipelineError) -> bool:
    m = e.message
    return "vocabulary" in m or "needs a tokenizer" in m


def validate(params: Any, vocab: Optional[Vocab] = None) -> None:
    """Checks a request's pipeline: parsed and validated against the stages' schemas, then
    built. Without the model's vocabulary at hand (vLLM's front end runs in another process
    than the engine), a stage that needs one is checked when the engine adds the request.
    Raises ``ValueError`` (a ``sieve.PipelineError`` carries the caret diagnostic)."""
    req = request_args(params)
    if req is None:
        return
    text = req[0]
    _native.parse(text)
    try:
        Pipeline(text, 0, vocab)
    except PipelineError as e:
        if vocab is not None or not _needs_vocab(e):
            raise


_TOKENIZER_FILES = ["tokenizer.json", "config.json", "generation_config.json"]


def model_files_dir(model_config: Any) -> Optional[str]:
    """The local directory holding the model's ``tokenizer.json``: its tokenizer (or model)
    path when that is a directory, else, for a Hugging Face name (``org/name``), its snapshot
    in the local Hugging Face cache, which vLLM filled when it loaded the model (resolved
    by ``huggingface_hub`` without the network, at the tokenizer's revision). ``None`` when
    neither holds it."""
    name = getattr(model_config, "tokenizer", None) or getattr(model_config, "model", None)
    if name is None:
        return None
    name = str(name)
    if os.path.isdir(name):
        return name
    try:
        from huggingface_hub import snapshot_download

        revision = getattr(model_config, "tokenizer_revision", None) or getattr(
            model_config, "revision", None
        )
        return snapshot_download(
            name, revision=revision, allow_patterns=_TOKENIZER_FILES, local_files_only=True
        )
    except Exception as e:  # not a Hub name, or not in the cache
        logger.info("sieve: %s is neither a directory nor a cached Hugging Face model (%s)", name, e)
        return None


def engine_vocab(vllm_config: Any) -> Optional[Vocab]:
    """The model's vocabulary from its directory's ``tokenizer.json`` (EOS ids from
    ``config.json`` and ``generation_config.json``; the directory as
    :func:`model_files_dir` finds it, Hugging Face names included), or ``None`` when there is
    none."""
    try:
        model_config = vllm_config.model_config
        directory = model_files_dir(model_config)
        path = os.path.join(str(directory), "tokenizer.json")
        if directory is None or not os.path.isfile(path):
            logger.info("sieve: no %s; stages that need the vocabulary will be refused", path)
            return None
        eos: List[int] = []
        for name in ("config.json", "generation_config.json"):
            try:
                with open(os.path.join(str(directory), name), encoding="utf-8") as f:
                    value = json.load(f).get("eos_token_id")
            except (OSError, ValueError):
                continue
            for e in [value] if isinstance(value, int) else (value or []):
                if e not in eos:
                    eos.append(int(e))
        size = model_config.get_vocab_size()
        return vocab_from_tokenizer(path, eos=eos, size=size)
    except Exception as e:  # the processor still serves requests that need no vocabulary
        logger.warning("sieve: could not read the model's vocabulary: %s", e)
        return None


class _Request:
    """One request's pipeline and the tokens it has seen: its prompt (accepted first, as
    ``sieve generate`` does), then every token appended to it."""

    __slots__ = ("pipeline", "native", "prompt", "output", "accepted", "mode", "started", "buf", "addr", "n")

    def __init__(self, pipeline: Pipeline, mode: str, prompt: Optional[Sequence[int]] = None,
                 output: Optional[List[int]] = None) -> None:
        self.pipeline = pipeline
        self.native = pipeline._native
        self.mode = mode
        self.prompt: List[int] = []
        self.output: List[int] = output if output is not None else []  # V1: vLLM's live list
        self.accepted = 0
        self.started = False
        # The history (prompt, then accepted tokens) as uint32, grown by doubling: handed to
        # the native step by address (kept with it: reading an array's address costs about a
        # microsecond) without rebuilding it every step.
        self.buf = np.zeros(64, dtype=np.uint32)
        self.addr = self.buf.ctypes.data
        self.n = 0
        if prompt is not None:
            self.start(prompt)

    def _push(self, t: int) -> None:
        if self.n == self.buf.size:
            self.buf = np.concatenate([self.buf, np.zeros(self.buf.size, dtype=np.uint32)])
            self.addr = self.buf.ctypes.data
        self.buf[self.n] = t
        self.n += 1
        self.pipeline.accept(t)

    def start(self, prompt: Sequence[int]) -> None:
        self.prompt = [int(t) for t in prompt]
        for t in self.prompt:
            self._push(t)
        self.started = True

    def sync(self) -> None:
        """Accepts the tokens appended to the live output list since the last step (a
        placeholder, negative, stops it until the token is known)."""
        out = self.output
        while self.accepted < len(out) and out[self.accepted] >= 0:
            self._push(int(out[self.accepted]))
            self.accepted += 1

    def follow(self, history: np.ndarray, prompt_len: int) -> None:
        """Model Runner V2: starts from the history's prompt, then accepts what follows it
        beyond the tokens accepted so far."""
        if not self.started:
            self.start(history[:prompt_len].tolist())
        generated = history[len(self.prompt):]
        for t in generated[self.accepted:].tolist():
            self._push(int(t))
            self.output.append(int(t))
        self.accepted = max(self.accepted, len(generated))

    def history(self) -> np.ndarray:
        return self.buf[: self.n]


class Requests:
    """The requests of a batch by slot, and stepping their rows: the part of the processor
    that does not depend on vLLM's interface (V1 or Model Runner V2)."""

    def __init__(self, vocab: Optional[Vocab] = None, threads: Optional[int] = None) -> None:
        self.vocab = vocab
        self.threads = default_threads() if threads is None else threads
        self.slots: Dict[int, _Request] = {}
        # Where a request's pipeline fails while running (a grammar with no way on, no
        # candidate left), its row is set to the first end-of-sequence id so the request
        # ends instead of the engine stopping; without one it passes through from then on.
        self.eos: List[int] = list(vocab.eos) if vocab is not None else []

    def add(self, slot: int, params: Any, prompt: Optional[Sequence[int]] = None,
            output: Optional[List[int]] = None, started: bool = True) -> bool:
        """Puts a new request in ``slot`` (replacing whatever was there); ``False`` when it
        names no pipeline (its rows pass through). ``started=False``: the prompt comes with
        the first step's history (Model Runner V2)."""
        self.slots.pop(slot, None)
        req = request_args(params)
        if req is None:
            return False
        text, seed, mode = req
        if seed is None:
            seed = secrets.randbits(64)
        try:
            pipeline = Pipeline(text, seed, self.vocab)
        except PipelineError as e:
            # Validation could not build it (no vocabulary in the front end) and it fails
            # here: the request runs unchanged rather than stopping the engine.
            logger.error("sieve: request's pipeline refused, its rows pass through:\n%s", e)
            return False
        self.slots[slot] = _Request(pipeline, mode, (prompt or []) if started else None, output)
        return True

    def remove(self, slot: int) -> None:
        self.slots.pop(slot, None)

    def move(self, a: int, b: int) -> None:
        """The request in ``a`` moves to ``b`` (``a`` becomes empty)."""
        req = self.slots.pop(a, None)
        self.slots.pop(b, None)
        if req is not None:
            self.slots[b] = req

    def swap(self, a: int, b: int) -> None:
        ra, rb = self.slots.pop(a, None), self.slots.pop(b, None)
        if ra is not None:
            self.slots[b] = ra
        if rb is not None:
            self.slots[a] = rb

    def sync(self) -> None:
        for req in self.slots.values():
            req.sync()

    def apply(self, logits: torch.Tensor, row_slots: Sequence[Optional[int]]) -> torch.Tensor:
        """Steps every row whose slot holds a request, in place (through a CPU float32 copy
        when ``logits`` is elsewhere or another type)."""
        if not self.slots:
            return logits
        slots = self.slots
        rows = [(r, slots[s]) for r, s in enumerate(row_slots) if s in slots]
        if not rows:
            return logits
        # `is_cpu` and one `stride()`: a tenth of the time `device.type` and two `stride(i)`
        # take, on a path run once per engine step.
        direct = logits.is_cpu and logits.dtype == torch.float32 and logits.stride()[1] == 1
        work = logits if direct else logits.detach().to("cpu", torch.float32).contiguous()
        n, vocab = work.shape
        ptr, stride = work.data_ptr(), work.stride()[0]
        # One call per mode present: its rows' pipelines and histories (`rows` keeps each
        # request's history buffer alive through the call).
        by_mode: Dict[str, Tuple[List[Any], List[Tuple[int, int, int]]]] = {}
        for r, q in rows:
            group = by_mode.get(q.mode)
            if group is None:
                group = by_mode[q.mode] = ([None] * n, [(0, 0, 0)] * n)
            group[0][r] = q.native
            group[1][r] = (q.addr, q.n, len(q.prompt))
        for mode in MODES:
            if mode not in by_mode:
                continue
            natives, hist = by_mode[mode]
            _, errors = _native.step_rows(natives, ptr, n, vocab, stride, hist, mode, self.threads)
            for r, kind, message in errors:
                self._failed(work, r, row_slots[r], f"{kind}: {message}")
        if not direct:
            idx = torch.tensor([r for r, _ in rows], dtype=torch.long)
            logits[idx.to(logits.device)] = work[idx].to(device=logits.device, dtype=logits.dtype)
        return logits


    def _failed(self, work: torch.Tensor, r: int, slot: Optional[int], message: str) -> None:
        """A request whose pipeline failed on this step (its row was left as it was): it
        ends, its row set to an end-of-sequence id, or without one passes through from now
        on; the engine goes on."""
        logger.error("sieve: the pipeline of the request in slot %s failed, %s: %s", slot,
                     "it ends (EOS)" if self.eos else "its rows pass through from now on", message)
        if self.eos:
            work[r].fill_(float("-inf"))
            work[r, self.eos[0]] = 0.0
        self.slots.pop(slot, None)


def _is_swap(how: Any) -> bool:
    if MoveDirectionality is not None and how == MoveDirectionality.SWAP:
        return True
    return str(getattr(how, "name", how)).upper().endswith("SWAP")


_BASES = tuple(b for b in (_V1Base, _V2Base) if b is not None and b is not object) or (object,)


class SieveLogitsProcessor(*_BASES):  # type: ignore[misc]
    """vLLM logits processor running each request's sieve pipeline (see the module doc).

    One class for both of vLLM's interfaces, so that the entry point works under either
    model runner: it subclasses V1's ``LogitsProcessor`` and, where the installed vLLM has
    it, Model Runner V2's; the constructor's arguments tell which one built it.

    vLLM loads entry-point processors and those named by class path; when both name this
    class, the engine builds it twice and the second, built before either has run a step,
    stays idle (it would run every pipeline a second time).
    """

    _vocab: Optional[Vocab] = None  # the engine's, for validation in the same process
    _first: Dict[int, Any] = {}  # id(vllm_config) -> weak reference to the active instance
    _instances: "weakref.WeakSet[Any]" = weakref.WeakSet()  # every live one, for inspection

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Refuses a request whose pipeline does not compile (``ValueError``, caret
        diagnostic)."""
        validate(sampling_params, cls._vocab)

    def __init__(self, vllm_config: Any, *args: Any) -> None:
        # V1: (vllm_config, device, is_pin_memory); Model Runner V2: (vllm_config, req_states).
        self.v2 = len(args) == 1
        self.req_states = args[0] if self.v2 else None
        vocab = engine_vocab(vllm_config) if vllm_config is not None else None
        type(self)._vocab = vocab
        self.requests = Requests(vocab)
        self.used = False
        self.idle = False
        type(self)._instances.add(self)
        if vllm_config is not None:
            prev = self._first.get(id(vllm_config))
            prev = prev() if prev is not None else None
            if prev is not None and not prev.used:
                self.idle = True
                logger.warning("sieve: SieveLogitsProcessor is loaded twice (entry point and "
                               "class path); the second copy stays idle")
            else:
                type(self)._first[id(vllm_config)] = weakref.ref(self)

    def is_argmax_invariant(self) -> bool:
        """False: in select mode the token is sieve's, not the argmax (V1)."""
        return False

    def update_state(self, batch_update: Any) -> None:
        """V1: applies the batch's changes (removed, then added, then moved) and accepts the
        tokens appended to every request since the last step."""
        self.used = True
        if self.idle:
            return
        if batch_update is not None:
            for slot in batch_update.removed:
                self.requests.remove(slot)
            for added in batch_update.added:
                if len(added) == 4:
                    slot, params, prompt, output = added
                else:  # vLLM before 0.10.2: (index, params, output_tok_ids)
                    slot, params, output = added
                    prompt = None
                self.requests.add(slot, params, prompt, output)
            for a, b, how in batch_update.moved:
                if _is_swap(how):
                    self.requests.swap(a, b)
                else:
                    self.requests.move(a, b)
        self.requests.sync()

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        """Model Runner V2: a request enters slot ``req_idx`` (slots are recycled); whether
        this processor changes its logits."""
        self.used = True
        if self.idle:
            return False
        return self.requests.add(req_idx, sampling_params, started=False)

    def apply_staged_writes(self) -> None:
        """Model Runner V2: nothing is staged on the device."""

    def apply(self, logits: torch.Tensor, ctx: Any = None) -> torch.Tensor:
        """Steps the rows of requests that name a pipeline, in place. V1 passes the logits
        alone (row = batch index); Model Runner V2 passes the step's ``LogitsContext``."""
        self.used = True
        if self.idle:
            return logits
        if ctx is None:
            return self.requests.apply(logits, range(logits.shape[0]))
        return self._apply_v2(logits, ctx)

    def _apply_v2(self, logits: torch.Tensor, ctx: Any) -> torch.Tensor:
        if not self.requests.slots:
            return logits
        rows = logits.shape[0]
        if len(ctx.idx_mapping_np) == rows:
            slots = [int(s) for s in ctx.idx_mapping_np]
            local = [0] * rows
        else:  # speculative decoding: several rows per request
            slots = ctx.expanded_idx_mapping.cpu().tolist()
            local = ctx.expanded_local_pos.cpu().tolist()
        wanted = [r for r in range(rows) if local[r] == 0 and slots[r] in self.requests.slots]
        if any(local):
            logger.warning("sieve: draft-token rows (speculative decoding) pass through")
        if not wanted:
            return logits
        pos = ctx.pos.cpu()
        st = self.req_states
        idx = torch.tensor([slots[r] for r in wanted], dtype=torch.long)
        lengths = [int(pos[r]) + 1 for r in wanted]
        tokens = st.all_token_ids.gpu[idx.to(st.all_token_ids.gpu.device), : max(lengths)].cpu().numpy()
        prompt_lens = st.prompt_len.np
        for k, r in enumerate(wanted):
            s = slots[r]
            self.requests.slots[s].follow(tokens[k, : lengths[k]], int(prompt_lens[s]))
        row_slots: List[Optional[int]] = [None] * rows
        for r in wanted:
            row_slots[r] = slots[r]
        return self.requests.apply(logits, row_slots)
