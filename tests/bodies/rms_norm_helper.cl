// spec: rms_norm
// expect: accepted
// A work-group of 64 per row computes the mean square; a helper (non-kernel)
// function stores each scaled element through its pointer parameter.
/* ksmith plan
   launch rms_rows global [N * 64] local [64] (x, weight, y, D)
*/
void store_scaled(__global float *dst, int i, float v, float scale, float w) {
  dst[i] = v * scale * w;
}

__kernel void rms_rows(__global const float *x, __global const float *weight, __global float *y, int D) {
  __local float red[64];
  const int r = get_group_id(0), lid = get_local_id(0);
  float q = 0.0f;
  for (int d = lid; d < D; d += 64) {
    float v = x[r * D + d];
    q += v * v;
  }
  red[lid] = q;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 32; w > 0; w >>= 1) {
    if (lid < w) red[lid] += red[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float scale = rsqrt(red[0] / D + 1e-6f);
  for (int d = lid; d < D; d += 64) store_scaled(y + r * D, d, x[r * D + d], scale, weight[d]);
}
