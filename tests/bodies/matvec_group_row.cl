// spec: matvec
// expect: accepted
// A work-group of 128 per row of a: strided partial dot products, then a tree
// reduction in local memory; work-item 0 writes y[row].
/* ksmith plan
   launch matvec_rows global [M * 128] local [128] (a, x, y, K)
*/
__kernel void matvec_rows(__global const float *a, __constant float *x, __global float *y, int K) {
  __local float part[128];
  const int row = get_group_id(0), lid = get_local_id(0);
  float acc = 0.0f;
  for (int k = lid; k < K; k += 128) acc += a[row * K + k] * x[k];
  part[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int width = 64; width > 0; width >>= 1) {
    if (lid < width) part[lid] += part[lid + width];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) y[row] = part[0];
}
