// spec: log_softmax
// expect: accepted
// A work-group of 64 per row: max, then sum of exp(x - max), then
// y = x - max - log(sum) written by the same group.
/* ksmith plan
   launch log_softmax_rows global [N * 64] local [64] (x, y, D)
*/
__kernel void log_softmax_rows(__global const float *x, __global float *y, int D) {
  __local float red[64];
  const int r = get_group_id(0), lid = get_local_id(0);
  float m = -INFINITY;
  for (int d = lid; d < D; d += 64) m = fmax(m, x[r * D + d]);
  red[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 32; w > 0; w >>= 1) {
    if (lid < w) red[lid] = fmax(red[lid], red[lid + w]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float row_max = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = 0.0f;
  for (int d = lid; d < D; d += 64) s += exp(x[r * D + d] - row_max);
  red[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 32; w > 0; w >>= 1) {
    if (lid < w) red[lid] += red[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float shift = row_max + log(red[0]);
  for (int d = lid; d < D; d += 64) y[r * D + d] = x[r * D + d] - shift;
}
