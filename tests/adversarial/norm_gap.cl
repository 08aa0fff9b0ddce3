// norm_gap.ks as its naive program computes it, by hand: a work-item per row for
// each sum, then one for the mean. Honest, it passes.
//   CHEAT_DROP_ROW  the mean leaves out its last row (at both sizes).
/* ksmith plan
   scratch row_p: f32[N]
   scratch row_q: f32[N]
   launch sums global [N] local [1] (x, p, q, row_p, row_q, N, D)
   launch mean global [1] local [1] (row_p, row_q, loss, N)
*/
__kernel void sums(__global const float *x, __global const float *p, __global const float *q, __global float *sp,
                   __global float *sq, int N, int D) {
  const int n = get_global_id(0);
  float a = 0.0f, b = 0.0f;
  for (int d = 0; d < D; ++d) {
    const float u = x[n * D + d] - p[n * D + d], v = x[n * D + d] - q[n * D + d];
    a += u * u;
    b += v * v;
  }
  sp[n] = a;
  sq[n] = b;
}

__kernel void mean(__global const float *sp, __global const float *sq, __global float *loss, int N) {
  float total = 0.0f;
#ifdef CHEAT_DROP_ROW
  const int rows = N - 1;
#else
  const int rows = N;
#endif
  for (int n = 0; n < rows; ++n) total += (sqrt(sp[n]) - sqrt(sq[n]) + 1.0f) / N;
  loss[0] = total;
}
