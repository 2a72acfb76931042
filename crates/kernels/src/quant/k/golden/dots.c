// Golden-file generator for the K-quant fidelity test (not part of the build): llama.cpp's own
// dot products of 5 weight rows (the golden blocks, 9 per row) with 5 activation rows (Q8_K of
// acts.f32), all 25 pairs, out[i * 5 + j] = row i of x . weight row j, as llama.cpp's CPU
// backend computes them (ggml_vec_dot_qX_K_q8_K of the linked build).
// Usage: dots TYPE weights.bin < acts.f32 > dots.f32   (TYPE 2..6 for q2_k..q6_k)
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
void ggml_cpu_init(void);
typedef void (*dotf)(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q2_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q3_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q4_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q5_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q6_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void quantize_row_q8_K_ref(const float*, void*, int64_t);
int main(int argc, char** argv) {
  ggml_cpu_init();
  int t = atoi(argv[1]);
  size_t bs[] = {0, 0, 84, 110, 144, 176, 210};
  dotf dots[] = {0, 0, ggml_vec_dot_q2_K_q8_K, ggml_vec_dot_q3_K_q8_K, ggml_vec_dot_q4_K_q8_K, ggml_vec_dot_q5_K_q8_K, ggml_vec_dot_q6_K_q8_K};
  const int rows = 5, k = 9 * 256;
  static unsigned char w[45 * 210], act[45 * 292];
  static float x[45 * 256];
  FILE* f = fopen(argv[2], "rb");
  if (fread(w, bs[t], 45, f) != 45) return 1;
  if (fread(x, 4, 45 * 256, stdin) != 45 * 256) return 1;
  quantize_row_q8_K_ref(x, act, 45 * 256);
  for (int i = 0; i < rows; i++) for (int j = 0; j < rows; j++) {
    float s;
    dots[t](k, &s, 0, w + j * 9 * bs[t], 0, act + i * 9 * 292, 0, 1);
    fwrite(&s, 4, 1, stdout);
  }
  return 0;
}
