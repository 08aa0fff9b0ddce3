// spec: softmax
// expect: plan unknown type
// Declares a scratch buffer of type f16, which is not among the scratch types (f32, i32, i64).
/* ksmith plan
   scratch stats: f16[N, 2]
   launch softmax_naive global [N] local [16] (x, stats, y, N, D)
*/
__kernel void softmax_naive(__global const float *x, __global half *stats, __global float *y, int N, int D) {
  const int r = get_global_id(0);
  if (r >= N) return;
  float m = -INFINITY, s = 0.0f;
  for (int d = 0; d < D; ++d) m = fmax(m, x[r * D + d]);
  for (int d = 0; d < D; ++d) s += exp(x[r * D + d] - m);
  for (int d = 0; d < D; ++d) y[r * D + d] = exp(x[r * D + d] - m) / s;
}
