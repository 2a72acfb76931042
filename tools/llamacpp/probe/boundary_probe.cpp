// boundary_probe: where do llama.cpp's and another engine's quantized logits part?
//
// Both engines quantize each activation row to 8-bit blocks before a quantized product
// (Q8_0 / Q8_1 for the legacy types, Q8_K for the K-quants). When a value lies within a few
// f32 ulps of a rounding boundary, an ulp of difference upstream puts one quant (or one
// block's f16 scale) one step apart, and the logits of the positions that read it move by
// about d_a * w. This program runs llama.cpp on a file the way `sieve-llamacpp logits ...
// --kv f32 --flash-attn off --threads 2` does (one batch) with a graph callback (cb_eval) that
//
//   scan  lists, over every quantized product's input, the values nearest a boundary of the
//         quantization ggml applies to it (the distance in units of the quant), the block
//         scales nearest an f16 rounding tie (in f32 ulps), and any exact f32 tie of a Q8_K
//         product (whose rounding depends on whether the compiler fused it into an fma);
//   nudge moves one element of one named node by ULPS ulps before its consumers run, so a
//         suspected boundary can be crossed and the logits compared again.
//
// Build (after tools/llamacpp/build.sh default):
//   B=$(ls -d target/llamacpp/default/release/build/llama-cpp-sys-2-*/out | head -1)
//   L="$B/lib/libllama.a $B/lib/libggml.a $B/lib/libggml-cpu.a $B/lib/libggml-base.a"
//   g++ -O1 -std=c++17 -I$B/include tools/llamacpp/probe/boundary_probe.cpp -o target/llamacpp/probe $L -lpthread -ldl
// Run:
//   target/llamacpp/probe MODEL.gguf 1,2,3 OUT.f32 scan [TOP]
//   target/llamacpp/probe MODEL.gguf 1,2,3 OUT.f32 nudge NODE ROW COL ULPS   (e.g. attn_norm-0 3 80 -1)
// OUT.f32 is [positions x vocab] little-endian f32, like `sieve-llamacpp logits`.
#include "ggml-cpu.h"
#include "ggml.h"
#include "llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void quiet(enum ggml_log_level, const char *, void *) {}

// One candidate: how far `value` is from a boundary, and where it is.
struct Near {
    double distance;
    std::string what, node, weight;
    int row, col;
    float value, scaled;
};

struct Probe {
    bool nudge = false;
    std::string node;
    int row = 0, col = 0, ulps = 0;
    bool done = false;
    std::vector<Near> quants, scales, ties;
};

float * at(ggml_tensor * t, int row, int col) {
    return (float *) ((char *) t->data + row * t->nb[1] + col * t->nb[0]);
}

// Distance, in f32 ulps of v, from v to the nearest tie between two f16 values.
double f16_tie_ulps(float v) {
    const ggml_fp16_t h = ggml_fp32_to_fp16(v);
    const float r = ggml_fp16_to_fp32(h);
    if (v == r || v == 0) {
        return 1e9;
    }
    // The f16 neighbour on v's side of r (f16 bits grow with magnitude for either sign).
    const ggml_fp16_t other = (ggml_fp16_t) (fabsf(v) > fabsf(r) ? h + 1 : h - 1);
    const double mid = ((double) r + (double) ggml_fp16_to_fp32(other)) / 2;
    const double ulp = (double) nextafterf(fabsf(v), INFINITY) - fabsf(v);
    return fabs((double) v - mid) / ulp;
}

double to_half(float s) {
    return fabs(s - floorf(s) - 0.5);
}

void scan(Probe * p, ggml_tensor * product) {
    ggml_tensor * w = product->src[0];
    ggml_tensor * x = product->src[1];
    if (x->type != GGML_TYPE_F32 || !ggml_is_quantized(w->type)) {
        return;
    }
    const ggml_type act = ggml_get_type_traits_cpu(w->type)->vec_dot_type;
    const int n = (int) x->ne[0];
    const std::string xn = ggml_get_name(x), wn = ggml_get_name(w);
    for (int r = 0; r < x->ne[1]; r++) {
        if (act == GGML_TYPE_Q8_K) {
            // quantize_row_q8_K_ref: iscale = -127 / (the value of largest magnitude).
            for (int b = 0; b < n; b += 256) {
                float amax = 0, max = 0;
                for (int j = 0; j < 256; j++) {
                    const float v = *at(x, r, b + j);
                    if (fabsf(v) > amax) {
                        amax = fabsf(v);
                        max = v;
                    }
                }
                if (amax == 0) {
                    continue;
                }
                const float iscale = -127.f / max;
                for (int j = 0; j < 256; j++) {
                    const float v = *at(x, r, b + j);
                    const float s = iscale * v;
                    p->quants.push_back({to_half(s), "Q8_K quant", xn, wn, r, b + j, v, s});
                    if (to_half(s) == 0) {
                        const double exact = (double) iscale * (double) v;
                        fprintf(stderr,
                                "f32 tie: %s row %d col %d: iscale %.9g x %.9g, f32 product %.9g, exact %.17g: "
                                "fused rounding %d, f32 rounding %d\n",
                                xn.c_str(), r, b + j, iscale, v, s, exact, (int) nearbyint(exact),
                                (int) nearbyintf(s));
                        p->ties.push_back({0, "Q8_K tie", xn, wn, r, b + j, v, s});
                    }
                }
            }
        } else {
            // quantize_row_q8_0 / _q8_1 (AVX2): d = amax / 127 (stored as f16), q = round(x * 127 / amax).
            const bool q8_1 = act == GGML_TYPE_Q8_1;
            for (int b = 0; b < n; b += 32) {
                float amax = 0;
                for (int j = 0; j < 32; j++) {
                    amax = fmaxf(amax, fabsf(*at(x, r, b + j)));
                }
                if (amax == 0) {
                    continue;
                }
                const float id = 127.f / amax;
                const float d = amax / 127.f;
                int sum = 0;
                for (int j = 0; j < 32; j++) {
                    const float v = *at(x, r, b + j);
                    const float s = v * id;
                    sum += (int) nearbyintf(s);
                    p->quants.push_back({to_half(s), q8_1 ? "Q8_1 quant" : "Q8_0 quant", xn, wn, r, b + j, v, s});
                }
                p->scales.push_back({f16_tie_ulps(d), "f16 scale d", xn, wn, r, b, d, d});
                if (q8_1) {
                    const float s = d * (float) sum;
                    p->scales.push_back({f16_tie_ulps(s), "f16 block sum s", xn, wn, r, b, s, s});
                }
            }
        }
    }
}

bool callback(ggml_tensor * t, bool ask, void * user) {
    Probe * p = (Probe *) user;
    if (p->nudge) {
        const bool mine = p->node == ggml_get_name(t);
        if (ask) {
            return mine;
        }
        if (mine && !p->done) {
            float * v = at(t, p->row, p->col);
            const float before = *v;
            for (int i = 0; i < abs(p->ulps); i++) {
                *v = nextafterf(*v, p->ulps > 0 ? INFINITY : -INFINITY);
            }
            fprintf(stderr, "nudged %s[%d][%d]: %.9g -> %.9g\n", p->node.c_str(), p->row, p->col, before, *v);
            p->done = true;
        }
        return true;
    }
    if (ask) {
        return t->op == GGML_OP_MUL_MAT;
    }
    if (t->op == GGML_OP_MUL_MAT) {
        scan(p, t);
    }
    return true;
}

void print(std::vector<Near> & v, int top, const char * unit) {
    std::sort(v.begin(), v.end(), [](const Near & a, const Near & b) { return a.distance < b.distance; });
    for (int i = 0; i < top && i < (int) v.size(); i++) {
        const Near & h = v[i];
        printf("%-16s %.3g %s  %s (into %s) row %d col %d  value %.9g  scaled %.9g\n", h.what.c_str(), h.distance,
               unit, h.node.c_str(), h.weight.c_str(), h.row, h.col, h.value, h.scaled);
    }
}

}  // namespace

int main(int argc, char ** argv) {
    const bool nudge = argc == 9 && strcmp(argv[4], "nudge") == 0;
    const bool scanning = (argc == 5 || argc == 6) && strcmp(argv[4], "scan") == 0;
    if (!nudge && !scanning) {
        fprintf(stderr,
                "usage: %s MODEL.gguf IDS OUT.f32 scan [TOP]\n"
                "       %s MODEL.gguf IDS OUT.f32 nudge NODE ROW COL ULPS\n",
                argv[0], argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    Probe p;
    p.nudge = nudge;
    int top = scanning && argc == 6 ? atoi(argv[5]) : 8;
    if (nudge) {
        p.node = argv[5];
        p.row = atoi(argv[6]);
        p.col = atoi(argv[7]);
        p.ulps = atoi(argv[8]);
    }
    std::vector<llama_token> ids;
    for (char * s = strtok(argv[2], ","); s; s = strtok(nullptr, ",")) {
        ids.push_back(atoi(s));
    }
    if (ids.empty()) {
        fprintf(stderr, "no ids\n");
        return 2;
    }
    llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    const uint32_t n = std::max<uint32_t>(16, (uint32_t) ids.size());
    cp.n_ctx = cp.n_batch = cp.n_ubatch = n;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.cb_eval = callback;
    cp.cb_eval_user_data = &p;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context\n");
        return 1;
    }
    llama_batch b = llama_batch_init((int32_t) ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); i++) {
        b.token[i] = ids[i];
        b.pos[i] = (llama_pos) i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = (int32_t) ids.size();
    if (llama_decode(ctx, b) != 0) {
        fprintf(stderr, "decode failed\n");
        return 1;
    }
    if (nudge && !p.done) {
        fprintf(stderr, "no node named %s\n", p.node.c_str());
        return 1;
    }
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE * f = fopen(argv[3], "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", argv[3]);
        return 1;
    }
    for (size_t i = 0; i < ids.size(); i++) {
        fwrite(llama_get_logits_ith(ctx, (int32_t) i), 4, nv, f);
    }
    fclose(f);
    if (scanning) {
        print(p.quants, top, "quant units from a rounding boundary");
        print(p.scales, top, "f32 ulps from an f16 tie");
    }
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
