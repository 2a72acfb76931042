"""Checks the seeded-sequence snapshots (tests/tests/snapshots/sequences__*.snap) by replaying
every draw: ChaCha8 from chacha.py, the fixtures and stage formulas of chains.py, and the
selectors as their module docs describe them (inverse-CDF draw over the candidates in their
current order with a strict `cum > u * total`; mirostat's mu updated right after the draw from
the renormalized probability of the drawn token; xtc's f32 coin `u <= probability`, drawn only
with at least two candidates).

    python3 tests/oracle/sequences.py tests/tests/snapshots
"""
import math, os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chacha import ChaCha8
import chains as C

SEED = 42
NEG = float('-inf')

def rank_order(c): return sorted(c, key=lambda x: (-x[1], x[0]))

def draw(c, rng):
    """Index into c drawn with probability softmax(c)."""
    u = rng.f64()
    mx = max(l for _, l in c)
    w = [math.exp(l - mx) if l != NEG else 0.0 for _, l in c]
    target = u * sum(w); cum = 0.0; last = None
    for i, x in enumerate(w):
        if x > 0:
            cum += x; last = i
            if cum > target: return i
    return last

class Dist:
    def __init__(s): s.rng = ChaCha8(SEED, 'dist')
    def __call__(s, c, h):
        i = draw(c, s.rng); return c, c[i][0]

class Mirostat:
    def __init__(s, tau=5.0, eta=0.1, m=100):
        s.tau, s.eta, s.m, s.mu = tau, eta, m, 2 * tau; s.rng = ChaCha8(SEED, 'mirostat')
    def __call__(s, c, h):
        n = len(c)
        pr = sorted([q for q in C.softmax(c) if q > 0], reverse=True)[:s.m]
        if len(pr) < 2: k = 1
        else:
            num = den = 0.0
            for i in range(len(pr) - 1):
                t = math.log((i + 2) / (i + 1)); num += t * math.log(pr[i] / pr[i + 1]); den += t * t
            sh = num / den; eps = sh - 1; lnN = math.log(n)
            ratio = 1 / lnN if eps == 0 else eps / (-math.expm1(-eps * lnN))
            kf = (ratio * 2 ** s.mu) ** (1 / sh)
            k = n if kf >= n else (1 if kf < 1 else int(kf))
        # keep_top(k) sorts into rank order, but does nothing when k >= n.
        kept = [x for x in rank_order(c) if x[1] != NEG][:k] if k < n else c
        i = draw(kept, s.rng)
        s.mu -= s.eta * (-math.log2(C.softmax(kept)[i]) - s.tau)
        return kept, kept[i][0]

class MirostatV2:
    def __init__(s, tau=5.0, eta=0.1):
        s.tau, s.eta, s.mu = tau, eta, 2 * tau; s.rng = ChaCha8(SEED, 'mirostat_v2')
    def __call__(s, c, h):
        th = 2 ** (-s.mu); pr = C.softmax(c)
        kept = [x for x, q in zip(c, pr) if q > 0 and q >= th] or rank_order([x for x in c if x[1] != NEG])[:1]
        i = draw(kept, s.rng)
        s.mu -= s.eta * (-math.log2(C.softmax(kept)[i]) - s.tau)
        return kept, kept[i][0]

class Xtc:
    def __init__(s, threshold, probability, min_keep=1):
        s.t, s.p, s.k = threshold, probability, min_keep; s.rng = ChaCha8(SEED, 'xtc')
    def __call__(s, c, h):
        if not (s.p > 0 and s.t <= 0.5) or len(c) < 2: return c
        if s.rng.f32() > s.p: return c
        srt = rank_order(c); pr = C.softmax(srt); m = 0
        for q in pr:
            if q > 0 and q >= s.t: m += 1
            else: break
        fin = len([x for x in srt if x[1] != NEG]); cut = max(m - 1, 0)
        return srt[cut:] if cut > 0 and fin - cut >= s.k else srt

def sorted_stage(f):
    """top_k / top_p / min_p leave (or keep) candidates in rank order here."""
    return lambda c, h: rank_order(f(c, h))

CASES = {
    'dist_zipf50k': ('zipf50k', lambda: [Dist()]),
    'card_zipf50k': ('zipf50k', lambda: [C.penalty(1.1), C.temp(0.7), sorted_stage(C.top_k(40)),
                                         sorted_stage(C.top_p(0.9)), sorted_stage(C.min_p(0.05)), Dist()]),
    'mirostat_zipf50k': ('zipf50k', lambda: [Mirostat()]),
    'mirostat_v2_zipf50k': ('zipf50k', lambda: [MirostatV2()]),
    'xtc_zipf50k': ('zipf50k', lambda: [Xtc(0.05, 0.5), Dist()]),
    'penalty_flat': ('flat', lambda: [C.penalty(1.5, 0.0, 2.0, 8), Dist()]),
}

def replay(logits, stages, n=20):
    history = list(C.HISTORY); out = []
    for _ in range(n):
        c = [[i, NEG if math.isnan(l) else l] for i, l in enumerate(logits)]
        token = None
        for st in stages:
            r = st(c, history)
            if isinstance(r, tuple): c, token = r
            else: c = r
        out.append(token); history.append(token)
    return out

def main(snapdir):
    fixtures = {n: f() for n, f in C.FIXTURES}; bad = 0
    for name, (fx, make) in CASES.items():
        text = open(os.path.join(snapdir, f'sequences__{name}.snap')).read()
        got = [int(m.group(1)) for m in re.finditer(r'^\s+\d+\s+(\d+)\s+\d+$', text, re.M)]
        want = replay(fixtures[fx], make())
        status = 'ok' if got == want else f'MISMATCH\n  snapshot {got}\n  oracle   {want}'
        bad += got != want
        print(f'{name}: {status}')
    print(f'{len(CASES)} sequences checked, {bad} mismatches')

if __name__ == '__main__': main(sys.argv[1])
