"""ChaCha8 exactly as `rand_chacha` 0.10 runs it behind `sieve_core::SieveRng`: the key from
rand_core's `seed_from_u64` (PCG32 fill), the stream word set to the FNV-1a hash of the stage
name, 64-bit block counter, `next_u64` = low word | high word << 32. Written from the ChaCha
specification and the crates' documented layouts; `python3 chacha.py` checks the core's pinned
first draw."""
M32 = 0xffffffff
M64 = 2**64 - 1
def rotl(x, n): return ((x << n) | (x >> (32 - n))) & M32
def qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & M32; s[d] = rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & M32; s[b] = rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & M32; s[d] = rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & M32; s[b] = rotl(s[b] ^ s[c], 7)
def pcg32(state):
    state = (state * 0x5851F42D4C957F2D + 0xA17654E46FBE17F3) & M64
    xs = (((state >> 18) ^ state) >> 27) & M32
    rot = state >> 59
    return state, ((xs >> rot) | (xs << ((32 - rot) & 31))) & M32
def fnv(name):
    h = 0xcbf29ce484222325
    for b in name.encode(): h = ((h ^ b) * 0x100000001b3) & M64
    return h
class ChaCha8:
    """rand_chacha's ChaCha8Rng: seed_from_u64 (PCG32 fill), set_stream, next_u64 = lo | hi << 32."""
    def __init__(self, seed, stage):
        st = seed; self.key = []
        for _ in range(8):
            st, w = pcg32(st); self.key.append(w)
        self.stream = fnv(stage); self.counter = 0; self.buf = []; self.i = 0
    def block(self):
        s = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] + self.key + [
            self.counter & M32, self.counter >> 32, self.stream & M32, self.stream >> 32]
        x = s[:]
        for _ in range(4):
            qr(x, 0, 4, 8, 12); qr(x, 1, 5, 9, 13); qr(x, 2, 6, 10, 14); qr(x, 3, 7, 11, 15)
            qr(x, 0, 5, 10, 15); qr(x, 1, 6, 11, 12); qr(x, 2, 7, 8, 13); qr(x, 3, 4, 9, 14)
        self.counter += 1
        return [(a + b) & M32 for a, b in zip(x, s)]
    def u32(self):
        if self.i >= len(self.buf): self.buf = self.block(); self.i = 0
        w = self.buf[self.i]; self.i += 1; return w
    def u64(self):
        lo = self.u32(); hi = self.u32(); return lo | (hi << 32)
    def f64(self): return (self.u64() >> 11) * (1.0 / (1 << 53))
    def f32(self): return (self.u32() >> 8) * (1.0 / (1 << 24))
if __name__ == '__main__':
    print(ChaCha8(42, 'dist').u64(), 'expected 672781725832014280')
