// spec: layer_norm
// expect: rule input-written
// A helper function centres a row in place: it stores through its pointer parameter,
// which the kernel passes the input x (offset by the row), so the input is written.
/* ksmith plan
   launch layer_norm_rows global [N] local [8] (x, gamma, beta, y, N, D)
*/
void center_row(__global float *row, int D, float mean) {
  for (int d = 0; d < D; ++d) row[d] -= mean;
}

__kernel void layer_norm_rows(__global float *x, __global const float *gamma, __global const float *beta,
                              __global float *y, int N, int D) {
  const int r = get_global_id(0);
  if (r >= N) return;
  float s = 0.0f;
  for (int d = 0; d < D; ++d) s += x[r * D + d];
  center_row(x + r * D, D, s / D);
  float q = 0.0f;
  for (int d = 0; d < D; ++d) q += x[r * D + d] * x[r * D + d];
  const float rstd = rsqrt(q / D + 1e-5f);
  for (int d = 0; d < D; ++d) y[r * D + d] = x[r * D + d] * rstd * gamma[d] + beta[d];
}
