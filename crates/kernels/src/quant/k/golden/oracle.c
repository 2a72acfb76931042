// Golden-file generator for the K-quant tests (not part of the build): quantizes rows with
// llama.cpp's reference quantizers and writes the bytes. Usage: oracle TYPE < in.f32 > out.bin
// TYPE: 2..6 for q2_K..q6_K, 8 for q8_K.
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
void quantize_row_q2_K_ref(const float*, void*, int64_t);
void quantize_row_q3_K_ref(const float*, void*, int64_t);
void quantize_row_q4_K_ref(const float*, void*, int64_t);
void quantize_row_q5_K_ref(const float*, void*, int64_t);
void quantize_row_q6_K_ref(const float*, void*, int64_t);
void quantize_row_q8_K_ref(const float*, void*, int64_t);
int main(int argc, char** argv) {
  int t = atoi(argv[1]);
  size_t cap = 1<<24, n = 0; float* x = malloc(cap*4);
  n = fread(x, 4, cap, stdin);
  n -= n % 256;
  size_t bs[] = {0,0,84,110,144,176,210,0,292};
  unsigned char* out = calloc(n/256, bs[t]);
  switch (t) {
    case 2: quantize_row_q2_K_ref(x, out, n); break;
    case 3: quantize_row_q3_K_ref(x, out, n); break;
    case 4: quantize_row_q4_K_ref(x, out, n); break;
    case 5: quantize_row_q5_K_ref(x, out, n); break;
    case 6: quantize_row_q6_K_ref(x, out, n); break;
    case 8: quantize_row_q8_K_ref(x, out, n); break;
  }
  fwrite(out, bs[t], n/256, stdout);
  return 0;
}
