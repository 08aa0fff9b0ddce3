// spec: softmax
// expect: accepted
// One kernel, a work-group of 128 per row: a max reduction, a sum-of-exp reduction,
// then the normalised writes, all within the group (no scratch buffer).
/* ksmith plan
   launch softmax_rows global [N * 128] local [128] (x, y, D)
*/
__kernel void softmax_rows(__global const float *x, __global float *y, int D) {
  __local float red[128];
  const int r = get_group_id(0), lid = get_local_id(0);
  __global const float *xr = x + r * D;
  float m = -INFINITY;
  for (int d = lid; d < D; d += 128) m = fmax(m, xr[d]);
  red[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 64; w > 0; w >>= 1) {
    if (lid < w) red[lid] = fmax(red[lid], red[lid + w]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float row_max = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = 0.0f;
  for (int d = lid; d < D; d += 128) s += exp(xr[d] - row_max);
  red[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 64; w > 0; w >>= 1) {
    if (lid < w) red[lid] += red[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float inv = 1.0f / red[0];
  for (int d = lid; d < D; d += 128) y[r * D + d] = exp(xr[d] - row_max) * inv;
}
