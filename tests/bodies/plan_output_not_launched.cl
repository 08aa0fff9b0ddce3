// spec: layer_norm
// expect: plan is passed to no kernel of the plan
// The plan only launches the statistics kernel; the output y is given to no launch.
/* ksmith plan
   scratch stats: f32[N, 2]
   launch row_moments global [N] local [8] (x, stats, N, D)
*/
__kernel void row_moments(__global const float *x, __global float *stats, int N, int D) {
  const int r = get_global_id(0);
  if (r >= N) return;
  float s = 0.0f, q = 0.0f;
  for (int d = 0; d < D; ++d) s += x[r * D + d];
  const float mean = s / D;
  for (int d = 0; d < D; ++d) q += (x[r * D + d] - mean) * (x[r * D + d] - mean);
  stats[2 * r] = mean;
  stats[2 * r + 1] = rsqrt(q / D + 1e-5f);
}
