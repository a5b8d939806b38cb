/*
 * MLX on CUDA: an exclusive cumsum of non-negative f32 weights is not constant across a run of zero weights, so the
 * inverse-CDF categorical draw can return an entry of weight 0 (a logit of -inf).
 *
 * Build against mlx-c (0.6.x) and a CUDA build of MLX:
 *   gcc -O1 -o cumsum-zero-steps cumsum-zero-steps.c -I MLX_C_INCLUDE -L LIBDIR -lmlxc -Wl,-rpath,LIBDIR
 *   ./cumsum-zero-steps
 * Part 1 needs any MLX with CUDA; part 2 needs MLX >= 0.32.1, where mx.random.categorical on a 1-D row draws by
 * inverse CDF (cumsum + searchsorted) instead of Gumbel-max.
 */
#include <mlx/c/mlx.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define V 65536

static uint64_t state = 0x9E3779B97F4A7C15ull;
static double next_unit(void) { /* xorshift64*, deterministic */
  state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
  return (double)((state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void ok(int status, const char* what) {
  if (status != 0) { fprintf(stderr, "%s failed\n", what); exit(2); }
}

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Exclusive cumsum of w on stream s; prints the places where c steps across a zero weight. */
static int zero_steps(const float* w, mlx_stream s, const char* name) {
  int shape[1] = {V};
  mlx_array a = mlx_array_new_data(w, shape, 1, MLX_FLOAT32);
  mlx_array c = mlx_array_new();
  ok(mlx_cumsum(&c, a, 0, false, false, s), "mlx_cumsum");
  ok(mlx_array_eval(c), "mlx_array_eval");
  const float* cv = mlx_array_data_float32(c);
  int steps = 0;
  for (int i = 1; i < V; i++) {
    if (w[i - 1] == 0.0f && cv[i] != cv[i - 1]) { /* c[i] = c[i-1] + w[i-1] = c[i-1] exactly */
      if (steps < 3) {
        printf("  %s: w[%d] = 0 but c[%d] = %.9g (0x%08x) != c[%d] = %.9g (0x%08x)\n", name, i - 1, i, cv[i],
               bits(cv[i]), i - 1, cv[i - 1], bits(cv[i - 1]));
      }
      steps++;
    }
  }
  printf("%s: %d of the exclusive cumsum's steps across a zero weight are non-zero\n", name, steps);
  mlx_array_free(c);
  mlx_array_free(a);
  return steps;
}

/* n draws of mx.random.categorical(log w, num_samples=n) on stream s; counts those that picked a weight-0 entry. */
static long masked_draws(const float* w, int n, mlx_stream s, const char* name) {
  float* lw = malloc(sizeof(float) * V);
  for (int i = 0; i < V; i++) lw[i] = w[i] > 0 ? logf(w[i]) : -INFINITY;
  int shape[1] = {V};
  mlx_array logits = mlx_array_new_data(lw, shape, 1, MLX_FLOAT32);
  mlx_array key = mlx_array_new(), draws = mlx_array_new();
  ok(mlx_random_key(&key, 42), "mlx_random_key");
  ok(mlx_random_categorical_num_samples(&draws, logits, 0, n, key, s), "mlx_random_categorical_num_samples");
  ok(mlx_array_eval(draws), "mlx_array_eval");
  const uint32_t* d = mlx_array_data_uint32(draws);
  long bad = 0;
  long first = -1;
  for (int i = 0; i < n; i++) {
    if (w[d[i]] == 0.0f) {
      if (first < 0) first = i;
      bad++;
    }
  }
  printf("%s: %ld of %d draws picked an entry of weight 0 (logit -inf)", name, bad, n);
  if (first >= 0) printf(", e.g. draw %ld = %u", first, d[first]);
  printf("\n");
  mlx_array_free(draws);
  mlx_array_free(key);
  mlx_array_free(logits);
  free(lw);
  return bad;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : (1 << 24);
  mlx_string v = mlx_string_new();
  ok(mlx_version(&v), "mlx_version");
  const char* version = mlx_string_data(v);
  printf("MLX %s\n", version);
  /* a top-k-like row: 1% of the entries have weight in (0, 1), the rest 0 */
  float* w = malloc(sizeof(float) * V);
  for (int i = 0; i < V; i++) w[i] = next_unit() < 0.01 ? (float)next_unit() : 0.0f;
  bool cuda = false;
  ok(mlx_cuda_is_available(&cuda), "mlx_cuda_is_available");
  mlx_stream cpu = mlx_default_cpu_stream_new();
  mlx_stream gpu = cuda ? mlx_default_gpu_stream_new() : cpu;
  if (!cuda) printf("no CUDA device: the gpu lines below run on the CPU\n");
  printf("part 1: exclusive cumsum of %d f32 weights, %s\n", V, "expected: constant across every zero weight");
  int g = zero_steps(w, gpu, "gpu");
  int c = zero_steps(w, cpu, "cpu");
  int major = 0, minor = 0, patch = 0;
  sscanf(version, "%d.%d.%d", &major, &minor, &patch);
  long bg = 0, bc = 0;
  if (major > 0 || minor > 32 || (minor == 32 && patch >= 1)) {
    printf("part 2: categorical(log w, num_samples=%d), expected: no draw of weight 0\n", n);
    bg = masked_draws(w, n, gpu, "gpu");
    bc = masked_draws(w, n, cpu, "cpu");
  } else {
    printf("part 2 skipped: MLX %s draws categorical by Gumbel-max (inverse CDF from 0.32.1)\n", version);
  }
  if (cuda) mlx_stream_free(gpu);
  mlx_stream_free(cpu);
  mlx_string_free(v);
  free(w);
  return (g > 0 || bg > 0) && c == 0 && bc == 0 ? 1 : 0; /* 1: reproduced */
}
