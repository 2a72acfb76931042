// The four ggml symbols ggml-quants.c needs besides itself, for oracle.c (never called
// by the reference quantizers).
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
void ggml_abort(const char* f, int l, const char* fmt, ...) { fprintf(stderr, "abort %s:%d\n", f, l); abort(); }
size_t ggml_row_size(int t, long long n) { abort(); }
const char* ggml_type_name(int t) { return "?"; }
size_t ggml_type_size(int t) { abort(); }
