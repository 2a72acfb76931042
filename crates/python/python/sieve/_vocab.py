"""Building a ``sieve.Vocab`` from what a Python user has at hand."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

from . import _native

Vocab = _native.Vocab


def _eos_list(eos: Union[None, int, Iterable[int]]) -> list:
    if eos is None:
        return []
    if isinstance(eos, int):
        return [eos]
    return [int(e) for e in eos]


def vocab_from_tokenizer(
    tokenizer: Any,
    eos: Union[None, int, Sequence[int]] = None,
    size: Optional[int] = None,
) -> "Vocab":
    """The vocabulary of a Hugging Face tokenizer: a transformers fast tokenizer, a
    ``tokenizers.Tokenizer``, or the path of a ``tokenizer.json``.

    Each token's bytes are read as ``sieve generate`` reads them (byte-level BPE and
    SentencePiece ``▁`` / ``<0xNN>`` undone, added tokens as their content). ``eos``: the
    end-of-sequence ids (default: the tokenizer's ``eos_token_id`` when it has one).
    ``size``: the model's vocabulary size when it differs from the tokenizer's (extra ids get
    no bytes).
    """
    if isinstance(tokenizer, (str, bytes)) or hasattr(tokenizer, "__fspath__"):
        with open(tokenizer, "r", encoding="utf-8") as f:
            json = f.read()
    elif hasattr(tokenizer, "backend_tokenizer"):
        json = tokenizer.backend_tokenizer.to_str()
    elif hasattr(tokenizer, "to_str") and hasattr(tokenizer, "token_to_id"):
        json = tokenizer.to_str()
    else:
        raise TypeError(
            "tokenizer must be a transformers fast tokenizer, a tokenizers.Tokenizer or the "
            f"path of a tokenizer.json, not {type(tokenizer).__name__}"
        )
    if eos is None:
        eos = getattr(tokenizer, "eos_token_id", None)
    if size is None and hasattr(tokenizer, "__len__") and hasattr(tokenizer, "backend_tokenizer"):
        size = max(len(tokenizer), tokenizer.backend_tokenizer.get_vocab_size(True))
    return Vocab.from_tokenizer_json(json, _eos_list(eos), size)


def as_vocab(vocab: Any, size: Optional[int] = None) -> Optional["Vocab"]:
    """``vocab`` as a ``sieve.Vocab``: ``None``, a ``Vocab``, a ``(tokens, eos)`` pair of
    byte strings and ids, or a tokenizer (see ``vocab_from_tokenizer``)."""
    if vocab is None or isinstance(vocab, Vocab):
        return vocab
    if isinstance(vocab, tuple) and len(vocab) == 2:
        tokens, eos = vocab
        return Vocab([bytes(t) for t in tokens], _eos_list(eos))
    return vocab_from_tokenizer(vocab, size=size)
