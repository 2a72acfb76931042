"""numpy arrays and CPU torch tensors handed to the native module by address.

A C-contiguous float32 array is read (and for ``Batch`` written) where it lies; anything
else that converts is copied once into one. The caller keeps the returned ``keep`` object
alive until the native call returns.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

MAX_TOKEN = 2**32 - 1


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _torch_cpu(x: Any, what: str) -> Any:
    if x.device.type != "cpu":
        raise ValueError(f"{what} are on {x.device}; sieve runs on the CPU: pass .cpu()")
    return x.detach()


def f32_vector(x: Any, what: str = "logits") -> Tuple[Tuple[int, int], Any]:
    """(address, length) of a 1-D float32 view of ``x``, and the object to keep alive."""
    if _is_torch(x):
        import torch

        t = _torch_cpu(x, what)
        if t.dim() != 1:
            raise ValueError(f"{what} must be 1-D, got shape {tuple(t.shape)}")
        if t.dtype != torch.float32 or not t.is_contiguous():
            t = t.to(torch.float32).contiguous()
        return (t.data_ptr(), t.numel()), t
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"{what} must be numbers, got dtype {a.dtype}")
    if a.dtype != np.float32 or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=np.float32)
    return (a.ctypes.data, a.size), a


def f32_matrix(x: Any, what: str = "logits") -> Tuple[Tuple[int, int, int, int], Any]:
    """(address, rows, columns, row stride) of a writable 2-D float32 array with unit column
    stride: ``x`` itself when it is one (written in place), else a float32 numpy copy."""
    if _is_torch(x):
        import torch

        t = _torch_cpu(x, what)
        if t.dim() != 2:
            raise ValueError(f"{what} must be 2-D [rows, vocab], got shape {tuple(t.shape)}")
        if t.dtype != torch.float32 or t.stride(1) != 1 or t.stride(0) < t.shape[1]:
            t = t.to(torch.float32).contiguous()
        return (t.data_ptr(), t.shape[0], t.shape[1], t.stride(0)), t
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{what} must be 2-D [rows, vocab], got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"{what} must be numbers, got dtype {a.dtype}")
    ok = (
        a.dtype == np.float32
        and a.flags.writeable
        and a.strides[1] == 4
        and (a.shape[0] <= 1 or a.strides[0] >= 4 * a.shape[1])
    )
    if not ok:
        a = np.array(a, dtype=np.float32, order="C")
    stride = a.strides[0] // 4 if a.shape[0] > 1 else a.shape[1]
    return (a.ctypes.data, a.shape[0], a.shape[1], stride), a


def tokens(x: Any, what: str = "history") -> np.ndarray:
    """``x`` (ints, a 1-D or 2-D integer array or tensor) as a C-contiguous uint32 array,
    refusing negative ids and ids beyond uint32."""
    if _is_torch(x):
        x = _torch_cpu(x, what).numpy()
    a = np.asarray(x)
    if a.size == 0:
        return np.zeros(a.shape, dtype=np.uint32)
    if a.dtype.kind not in "iu":  # signed or unsigned integers (not bool)
        raise TypeError(f"{what} must be integer token ids, got dtype {a.dtype}")
    if a.dtype != np.uint32:
        lo, hi = int(a.min()), int(a.max())
        if lo < 0:
            raise ValueError(f"{what}: token id {lo} is negative")
        if hi > MAX_TOKEN:
            raise ValueError(f"{what}: token id {hi} is beyond uint32")
    return np.ascontiguousarray(a, dtype=np.uint32)


def seed(x: Any) -> int:
    """A seed: an int in [0, 2**64)."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(x).__name__}")
    x = int(x)
    if not 0 <= x < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {x}")
    return x


def token(x: Any) -> int:
    """A token id: an int in [0, 2**32)."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"token must be an int, got {type(x).__name__}")
    x = int(x)
    if not 0 <= x <= MAX_TOKEN:
        raise ValueError(f"token must be in [0, 2**32), got {x}")
    return x
