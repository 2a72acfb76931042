"""Compare two GGUF files key by key and tensor by tensor (e.g. llama.cpp's own file of a
Hugging Face directory against `sieve quantize`'s): keys that differ or are only in one file,
then each tensor's type, shape, whether its bytes are equal and the largest difference of its
dequantized values.

Needs the `gguf` package (llama.cpp's gguf-py: PYTHONPATH=.../vendor/llama.cpp/gguf-py) and
numpy.

Usage: python tools/gguf/diff_gguf.py A.gguf B.gguf [--all]   (--all: list equal tensors too)
"""

import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def metadata(reader):
    out = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        out[key] = (tuple(field.types), field.contents())
    return out


def short(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def main():
    args = [a for a in sys.argv[1:] if a != "--all"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    show_all = "--all" in sys.argv
    a, b = GGUFReader(args[0]), GGUFReader(args[1])
    ma, mb = metadata(a), metadata(b)
    for key in sorted(set(ma) | set(mb)):
        if ma.get(key) != mb.get(key):
            print(f"key {key}\n  A: {short(ma.get(key))}\n  B: {short(mb.get(key))}")
    ta = {t.name: t for t in a.tensors}
    tb = {t.name: t for t in b.tensors}
    for name in sorted(set(ta) | set(tb)):
        x, y = ta.get(name), tb.get(name)
        if x is None or y is None:
            print(f"tensor {name}: only in {'A' if y is None else 'B'}")
            continue
        line = f"tensor {name}: {x.tensor_type.name}{list(map(int, x.shape))} vs " \
               f"{y.tensor_type.name}{list(map(int, y.shape))}"
        same_bytes = x.tensor_type == y.tensor_type and np.array_equal(
            np.asarray(x.data).view(np.uint8), np.asarray(y.data).view(np.uint8))
        if list(x.shape) == list(y.shape):
            dx = dequantize(x.data, x.tensor_type).astype(np.float64)
            dy = dequantize(y.data, y.tensor_type).astype(np.float64)
            line += f", bytes equal {same_bytes}, max |dequantized A - B| {np.abs(dx - dy).max():.3g}"
        if show_all or not same_bytes:
            print(line)


if __name__ == "__main__":
    main()
