// spec: rms_norm
// expect: rule syntax
// Names a variable `half`, which is an OpenCL C type: Clang refuses the declaration.
/* ksmith plan
   launch rms_rows global [N * 64] local [64] (x, weight, y, D)
*/
__kernel void rms_rows(__global const float *x, __global const float *weight, __global float *y, int D) {
  __local float red[64];
  const int r = get_group_id(0), lid = get_local_id(0);
  float q = 0.0f;
  for (int d = lid; d < D; d += 64) q += x[r * D + d] * x[r * D + d];
  red[lid] = q;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int half = 32; half > 0; half >>= 1) {
    if (lid < half) red[lid] += red[lid + half];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float scale = rsqrt(red[0] / D + 1e-6f);
  for (int d = lid; d < D; d += 64) y[r * D + d] = x[r * D + d] * scale * weight[d];
}
