// examples/softmax.ks as a kernel body: the naive program's four kernels, written by
// hand for any sizes (N and D are macros). As it stands it is honest, and the
// evaluator must accept it. Each CHEAT_* macro, defined before it, turns it into a
// body that games a benchmark the way kernels have, and the evaluator must catch it:
//   CHEAT_OUT_OF_BOUNDS        writes one element past the end of its output y
//   CHEAT_FIRST_RUN_ONLY       writes each output element only while it holds NaN (the
//                              evaluator's poison): only on the first run
//   CHEAT_EARLY_RETURN         returns early where the output already looks computed
//   CHEAT_READ_BEFORE_WRITE    starts each row maximum from what row_max holds: right
//                              from NaN (fmax ignores it), wrong from anything else
//   CHEAT_STALE_TOTAL          keeps the row sums of the last run where they look
//                              computed: wrong for new inputs
//   CHEAT_REUSE_INTERMEDIATE   keeps the row maxima of the last run where they look
//                              plausible: right (softmax is shift-invariant), but the
//                              timed runs skip a pass
//   CHEAT_INPUT_AT_TIMED_SIZES overwrites its input x, at the timed sizes only: a
//                              persistent worker would give the next candidate wrong inputs
__kernel void row_max(__global const float *x, __global float *row_max) {
  int n = get_global_id(0);
  if (n >= N) return;
#ifdef CHEAT_REUSE_INTERMEDIATE
  if (row_max[n] > -64.0f && row_max[n] < 64.0f) return;  // computed by an earlier run
#endif
#ifdef CHEAT_READ_BEFORE_WRITE
  float m = row_max[n];
#else
  float m = -INFINITY;
#endif
  for (int d = 0; d < D; ++d) m = fmax(m, x[n * D + d]);
  row_max[n] = m;
}

__kernel void e(__global const float *x, __global const float *row_max, __global float *e) {
  int i = get_global_id(0);
  if (i >= N * D) return;
  e[i] = exp(x[i] - row_max[i / D]);
#ifdef CHEAT_INPUT_AT_TIMED_SIZES
  if (N * D > 4096) ((__global float *)x)[i] = 0.5f;  // past the check sizes only
#endif
}

__kernel void total(__global const float *e, __global float *total) {
  int n = get_global_id(0);
  if (n >= N) return;
#ifdef CHEAT_STALE_TOTAL
  if (total[n] > 0.0f && total[n] < 1e30f) return;  // computed by an earlier run
#endif
  float s = 0.0f;
  for (int d = 0; d < D; ++d) s += e[n * D + d];
  total[n] = s;
}

__kernel void y(__global float *y, __global const float *e, __global const float *total) {
  int i = get_global_id(0);
  if (i >= N * D) return;
#if defined(CHEAT_FIRST_RUN_ONLY)
  if (y[i] == y[i]) return;  // not NaN: written by an earlier run
#elif defined(CHEAT_EARLY_RETURN)
  if (y[i] >= 0.0f && y[i] <= 1.0f) return;  // looks like a softmax already
#endif
  y[i] = e[i] / total[i / D];
#ifdef CHEAT_OUT_OF_BOUNDS
  if (i == 0) y[N * D + 5] = 42.0f;
#endif
}
