// spec: layer_norm
// expect: rule input-unread
// Leaves beta out of every launch (and the shift out of the math): beta is given to no kernel.
/* ksmith plan
   launch layer_norm_rows global [N] local [8] (x, gamma, y, N, D)
*/
__kernel void layer_norm_rows(__global const float *x, __global const float *gamma, __global float *y, int N, int D) {
  const int r = get_global_id(0);
  if (r >= N) return;
  float s = 0.0f;
  for (int d = 0; d < D; ++d) s += x[r * D + d];
  const float mean = s / D;
  float q = 0.0f;
  for (int d = 0; d < D; ++d) q += (x[r * D + d] - mean) * (x[r * D + d] - mean);
  const float rstd = rsqrt(q / D + 1e-5f);
  for (int d = 0; d < D; ++d) y[r * D + d] = (x[r * D + d] - mean) * rstd * gamma[d];
}
