"""sieve: user-ordered sampler pipelines (``penalty(1.1) | temp(0.7) | top_k(40) | dist``)
for Python, transformers' ``generate`` and vLLM.

- ``check(text)``: the canonical form, or ``PipelineError`` with a caret diagnostic;
- ``samplers()``: every known stage with its parameters; ``load_plugin(path)``: a plugin's
  stages (the same loader as ``sieve --plugin``);
- ``Pipeline``: one sequence (``apply``, ``probabilities``, ``accept``, ``reset``, ``fork``);
- ``Batch``: many rows of a ``[rows, vocab]`` array at once, in parallel;
- ``Vocab`` / ``vocab_from_tokenizer``: token bytes for stages that name tokens by text;
- ``sieve.transformers.SieveLogitsProcessor`` and ``sieve.vllm.SieveLogitsProcessor``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Union

from . import _native
from ._errors import PipelineError, PluginError, SamplingError, SieveError
from ._pipeline import Pipeline
from ._vocab import Vocab, vocab_from_tokenizer
from .batch import Batch

_native.set_classes(PipelineError, PluginError, SamplingError, SieveError)

__version__ = _native.__version__

__all__ = [
    "Batch",
    "Pipeline",
    "PipelineError",
    "PluginError",
    "SamplingError",
    "SieveError",
    "Vocab",
    "check",
    "load_plugin",
    "samplers",
    "vocab_from_tokenizer",
]


def check(text: str) -> str:
    """The canonical form of pipeline ``text`` (every argument named, defaults filled,
    ``dist`` appended when it ends in no selector), as ``sieve check`` prints it. Raises
    ``PipelineError`` (``str(e)`` is the caret diagnostic; ``e.line``, ``e.column``)."""
    if not isinstance(text, str):
        raise TypeError(f"the pipeline must be a str, not {type(text).__name__}")
    return _native.check(text)


def samplers() -> List[Dict[str, Any]]:
    """Every known stage (built-ins and loaded plugins), sorted by name, as dicts with
    ``name``, ``doc``, ``selector``, ``origin``, ``plugin`` (``None`` or its name, version
    and file) and ``params`` (each with ``name``, ``type``, ``required``, ``default``,
    ``range``, ``doc``): the shape of ``sieve samplers --json``."""
    return _native.samplers()


def load_plugin(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Loads a sieve plugin library (``.so`` / ``.dylib`` / ``.dll``) and registers its
    stages for pipelines built afterwards; returns its ``name``, ``version``, ``file`` and
    ``stages``. Loading the same file again returns the same plugin. Raises ``PluginError``
    for a file that is not a sieve plugin of this ABI or defines a stage that exists.

    Loading a library runs its code: load only files you trust.
    """
    return _native.load_plugin(os.fspath(path))
