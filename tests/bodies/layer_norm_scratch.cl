// spec: layer_norm
// expect: accepted
// Two kernels sharing a scratch buffer: row_moments puts each row's mean and rstd
// (biased variance, eps 1e-5) in stats; normalize_rows writes y through a row pointer.
/* ksmith plan
   scratch stats: f32[N, 2]     # per row: mean, rsqrt(var + 1e-5)
   launch row_moments global [N * 64] local [64] (x, stats, D)
   launch normalize_rows global [N * 64] local [64] (x, gamma, beta, stats, y, D)
*/
__kernel void row_moments(__global const float *x, __global float *stats, int D) {
  __local float s1[64], s2[64];
  const int r = get_group_id(0), lid = get_local_id(0);
  __global const float *xr = x + r * D;
  float a = 0.0f;
  for (int d = lid; d < D; d += 64) a += xr[d];
  s1[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 32; w > 0; w >>= 1) {
    if (lid < w) s1[lid] += s1[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float mean = s1[0] / D;
  float q = 0.0f;
  for (int d = lid; d < D; d += 64) {
    float t = xr[d] - mean;
    q += t * t;
  }
  s2[lid] = q;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 32; w > 0; w >>= 1) {
    if (lid < w) s2[lid] += s2[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    stats[2 * r] = mean;
    stats[2 * r + 1] = rsqrt(s2[0] / D + 1e-5f);
  }
}

__kernel void normalize_rows(__global const float *x, __global const float *gamma, __global const float *beta,
                             __global const float *stats, __global float *y, int D) {
  const int r = get_group_id(0), lid = get_local_id(0);
  const float mean = stats[2 * r], rstd = stats[2 * r + 1];
  __global const float *xr = x + r * D;
  __global float *row = y + r * D;
  for (int d = lid; d < D; d += 64) row[d] = (xr[d] - mean) * rstd * gamma[d] + beta[d];
}
