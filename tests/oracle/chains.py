"""Checks the chain snapshots (tests/tests/snapshots/chains__*.snap) against an independent
re-implementation of every built-in stage, written from the formulas in the stages' module docs
(crates/samplers/src/*.rs), not from their code.

    python3 tests/oracle/chains.py tests/tests/snapshots

The fixtures are regenerated here from their description in tests/src/logits.rs (SplitMix64
included). Softmax, entropy and thresholds are computed in f64; the logit arithmetic of `temp`
and `penalty` is rounded to f32 as the stages do, so logits agree to the printed digits. For each
pipeline x fixture it compares: the number of survivors, every printed row (id, logit and p to six
significant digits, '%.6g'), the survivors' mass in the input, and the selected token (greedy:
the lowest id among the largest logits; dist and mirostat: the first draw of their seeded
ChaCha8 stream, see chacha.py).

Needs only the Python standard library."""
import math, struct, re, sys, glob, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chacha import ChaCha8

NEG = float('-inf')
def f32(x): return struct.unpack('f', struct.pack('f', x))[0]

# ---- fixtures (from the descriptions in tests/src/logits.rs) ----
def base(): return [f32(((7*i) % 11) * 0.25 - 1.0) for i in range(16)]
def peaked():
    l = base(); l[1] = 5.0; return l
def flat(): return [1.0]*16
def ties():
    l = [0.0]*16
    for v, ids in [(2.0,[2,7,11]),(1.0,[0,4,9,13,15]),(-0.5,[1,5,8,12]),(-3.0,[3,6,10,14])]:
        for i in ids: l[i] = v
    return l
def neg_inf():
    l = base()
    for i in [0,6,14]: l[i] = NEG
    return l
def nan():
    l = base()
    for i in [1,3,10]: l[i] = float('nan')
    return l
M = 2**64
class SM:
    def __init__(s, seed): s.s = seed
    def u64(s):
        s.s = (s.s + 0x9E3779B97F4A7C15) % M
        z = s.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M
        return z ^ (z >> 31)
    def f64(s): return (s.u64() >> 11) / float(1 << 53)
    def below(s, n): return (s.u64() * n) >> 64
def zipf50k():
    g = SM(0x5EED2024)
    l = [f32(-1.1*math.log(r+1) + 0.1*(g.f64()-0.5)) for r in range(50000)]
    for i in range(49999, 0, -1):
        j = g.below(i+1); l[i], l[j] = l[j], l[i]
    return l
FIXTURES = [('peaked', peaked), ('flat', flat), ('ties', ties), ('neg_inf', neg_inf), ('nan', nan), ('zipf50k', zipf50k)]
HISTORY = [0, 1, 1, 2, 0, 1]

# ---- helpers: candidates are lists of [id, logit] ----
def rank_sorted(c): return sorted(c, key=lambda x: (-x[1], x[0]))
def finite(c): return [x for x in c if x[1] != NEG]
def softmax(c):
    mx = max((x[1] for x in c), default=NEG)
    if mx == NEG: return [0.0]*len(c)
    w = [math.exp(x[1]-mx) if x[1] != NEG else 0.0 for x in c]
    t = sum(w); return [v/t for v in w]
def entropy(p): return -sum(q*math.log(q) for q in p if q > 0)
def argmax_id(c):
    f = finite(c)
    return rank_sorted(f)[0][0] if f else None

# ---- stages ----
def temp(t, rng=0.0, ex=1.0):
    def apply(c, h):
        tt = t
        if rng > 0:
            n = len(finite(c))
            if n <= 1: return c
            H = entropy(softmax(c)); ratio = min(max(H/math.log(n), 0.0), 1.0)
            tmin = max(0.0, t-rng); tmax = t+rng
            tt = tmin + (tmax-tmin)*ratio**ex
        elif t == 1: return c
        if tt <= 0:
            k = argmax_id(c)
            return [[i, l if i == k else NEG] for i, l in c]
        fac = f32(1/tt)
        return [[i, f32(l*fac)] for i, l in c]
    return apply
def top_k(k):
    def apply(c, h):
        if k == 0 or k >= len(c): return c
        return [x for x in rank_sorted(c) if x[1] != NEG][:k]
    return apply
def top_p(p, min_keep=1):
    def apply(c, h):
        if p >= 1: return c
        s = rank_sorted(c); pr = softmax(s); cum = 0
        for i, q in enumerate(pr):
            cum += q
            if cum >= p and i+1 >= min_keep: return s[:i+1]
        return s
    return apply
def min_p(p):
    def apply(c, h):
        if p <= 0: return c
        mx = max(x[1] for x in c); th = mx + math.log(p)
        return [x for x in c if x[1] >= th]
    return apply
def typical(p, min_keep=1):
    def apply(c, h):
        if p >= 1: return c
        pr = softmax(c); H = entropy(pr)
        sc = [(abs((-math.log(q) if q > 0 else math.inf) - H), x[0], x, q) for x, q in zip(c, pr) if x[1] != NEG]
        sc.sort(key=lambda t: (t[0], t[1]))
        cum = 0; keep = len(sc)
        for i, t in enumerate(sc):
            cum += t[3]
            if cum > p and i+1 >= min_keep: keep = i+1; break
        return [t[2] for t in sc[:keep]]
    return apply
def xtc(threshold, min_keep=1):  # probability = 1: always acts
    def apply(c, h):
        if threshold > 0.5 or len(c) < 2: return c
        s = rank_sorted(c); pr = softmax(s)
        m = 0
        for q in pr:
            if q > 0 and q >= threshold: m += 1
            else: break
        fin = len(finite(s)); cut = max(m-1, 0)
        if cut > 0 and fin - cut >= min_keep: return s[cut:]
        return s
    return apply
def penalty(repeat, freq=0.0, pres=0.0, last_n=64):
    def apply(c, h):
        w = h[-last_n:] if last_n else []
        cnt = {}
        for t in w: cnt[t] = cnt.get(t, 0) + 1
        out = []
        for i, l in c:
            if i in cnt and l != NEG:
                r = f32(repeat)
                l = f32(l*r) if l < 0 else (f32(l/r) if l > 0 else l)
                l = f32(l - f32(f32(cnt[i]*f32(freq)) + f32(pres)))
            out.append([i, l])
        return out
    return apply
def logit_bias(b):
    return lambda c, h: [[i, l + b.get(i, 0.0)] for i, l in c]
def no_repeat_ngram(n):
    def apply(c, h):
        L = len(h)
        if n == 0 or L < n: return c
        pre = h[L-n+1:] if n > 1 else []
        banned = {h[i+n-1] for i in range(0, L-n+1) if h[i:i+n-1] == pre}
        return [[i, NEG if i in banned else l] for i, l in c]
    return apply
def drop_improbable(c, th):
    pr = softmax(c); top = max(x[1] for x in c)
    return [x for x, q in zip(c, pr) if q >= th or x[1] >= top]
def epsilon(e): return lambda c, h: drop_improbable(c, e)
def eta(e):
    def apply(c, h):
        H = entropy(softmax(c)); return drop_improbable(c, min(e, math.sqrt(e)*math.exp(-H)))
    return apply
def mirostat(tau, m=100):
    def apply(c, h):
        mu = 2*tau
        pr = sorted([q for q in softmax(c) if q > 0], reverse=True)[:m]
        if len(pr) < 2: k = 1
        else:
            num = den = 0.0
            for i in range(len(pr)-1):
                t = math.log((i+2)/(i+1)); b = math.log(pr[i]/pr[i+1]); num += t*b; den += t*t
            s = num/den; eps = s-1; N = len(c)
            ratio = 1/math.log(N) if eps == 0 else eps/(-math.expm1(-eps*math.log(N)))
            base = ratio*2**mu
            if s == 0: kf = 0.0 if base < 1 else (1.0 if base == 1 else math.inf)
            else:
                try: kf = base**(1/s)
                except OverflowError: kf = math.inf
            k = len(c) if kf >= len(c) else (1 if kf < 1 else int(kf))
        return top_k(k)(c, h)
    return apply
def mirostat_v2(tau):
    def apply(c, h):
        th = 2**(-2*tau); pr = softmax(c)
        kept = [x for x, q in zip(c, pr) if q > 0 and q >= th]
        return kept if kept else rank_sorted(finite(c))[:1]
    return apply
ident = lambda c, h: c

PIPELINES = {
    'greedy': [], 'dist': [], 'mirostat': [mirostat(3.0)], 'mirostat_v2': [mirostat_v2(3.0)],
    'temp_0_7': [temp(0.7)], 'temp_0': [temp(0)], 'temp_dynamic': [temp(1.0, 0.5)],
    'top_k_5': [top_k(5)], 'top_p_0_9': [top_p(0.9)], 'min_p_0_05': [min_p(0.05)],
    'typical_0_5': [typical(0.5)], 'xtc_always': [xtc(0.1)], 'penalty_1_1': [penalty(1.1)],
    'penalty_full': [penalty(1.2, 0.5, 0.25)], 'logit_bias': [logit_bias({3: 2.5, 4: NEG, 7: -1.0})],
    'no_repeat_ngram_2': [no_repeat_ngram(2)], 'epsilon': [epsilon(0.02)], 'eta': [eta(0.02)],
    'card': [penalty(1.1), temp(0.7), top_k(40), top_p(0.9), min_p(0.05)],
    'temp_then_top_p': [temp(0.7), top_p(0.9)], 'top_p_then_temp': [top_p(0.9), temp(0.7)],
    'temp_then_min_p': [temp(1.5), min_p(0.1)], 'min_p_then_temp': [min_p(0.1), temp(1.5)],
}
GREEDY = {k for k in PIPELINES if k not in ('dist', 'mirostat', 'mirostat_v2')}
# The random selectors and their ChaCha8 streams (run seed 42). They draw over the survivors in
# the order the stage leaves them: id order, except after mirostat's top-k cut (rank order).
RANDOM = {'dist': 'dist', 'mirostat': 'mirostat', 'mirostat_v2': 'mirostat_v2'}

def first_draw(stream, survivors_in_order):
    """The survivor a fresh selector draws first: inverse CDF with a strict `cum > u * total`."""
    u = ChaCha8(42, stream).f64()
    mx = max(l for _, l in survivors_in_order)
    w = [math.exp(l - mx) for _, l in survivors_in_order]
    target = u * sum(w); cum = 0.0
    for (i, _), x in zip(survivors_in_order, w):
        cum += x
        if cum > target: return i
    return survivors_in_order[-1][0]

def expected(stages, logits):
    c = [[i, NEG if math.isnan(l) else l] for i, l in enumerate(logits)]
    for s in stages: c = s(c, HISTORY)
    surv = rank_sorted(finite(c)); pr = softmax(surv)
    inp = softmax([[i, NEG if math.isnan(l) else l] for i, l in enumerate(logits)])
    mass = sum(inp[i] for i, _ in surv)
    return surv, pr, mass, finite(c)

def g6(x): return '%.6g' % x

def parse(path):
    secs = {}; cur = None
    for line in open(path):
        m = re.match(r'== (\w+) ', line)
        if m: cur = secs.setdefault(m.group(1), {'rows': []}); continue
        if cur is None: continue
        if line.startswith('selected:'): cur['selected'] = int(line.split()[1])
        elif line.startswith('error:'): cur['error'] = line.strip()
        elif line.startswith('survivors:'):
            m = re.match(r'survivors: (\d+) of (\d+) finite; their mass in the input: (\S+)', line)
            cur['count'] = int(m.group(1)); cur['mass'] = m.group(3)
        elif re.match(r'\s+\d+\s', line):
            a = line.split(); cur['rows'].append((int(a[0]), a[1], a[2]))
    return secs

def main(snapdir):
    fx = {n: f() for n, f in FIXTURES}
    bad = 0; checked = 0
    for name, stages in PIPELINES.items():
        secs = parse(os.path.join(snapdir, f'chains__{name}.snap'))
        for fname, logits in fx.items():
            s = secs[fname]; surv, pr, mass, in_order = expected(stages, logits)
            rows = [(i, g6(l), g6(p)) for (i, l), p in zip(surv, pr)]
            errs = []
            if s['count'] != len(surv): errs.append(f"count {s['count']} vs {len(surv)}")
            if s['rows'] != rows[:len(s['rows'])]:
                diff = [(a, b) for a, b in zip(s['rows'], rows) if a != b]
                errs.append(f"rows differ: {diff[:4]}")
            if abs(float(s['mass']) - mass) > 1e-5 * max(mass, 1e-12) + 1e-12: errs.append(f"mass {s['mass']} vs {mass}")
            if name in GREEDY and s.get('selected') != (surv[0][0] if surv else None): errs.append(f"selected {s.get('selected')} vs {surv[0][0]}")
            if name in RANDOM:
                want = first_draw(RANDOM[name], in_order)
                if s.get('selected') != want: errs.append(f"selected {s.get('selected')} vs {want}")
            checked += 1
            if errs: bad += 1; print(name, fname, '; '.join(errs))
    print(f'{checked} fixture x pipeline sections checked, {bad} mismatches')

if __name__ == '__main__': main(sys.argv[1])
