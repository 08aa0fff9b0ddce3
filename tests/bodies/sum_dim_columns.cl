// spec: sum_dim
// expect: accepted
// A 2-D launch: dim 0 over the columns j, dim 1 over the batches b; each work-item
// sums its column over R (coalesced across j), reading through a pointer variable.
/* ksmith plan
   launch sum_columns global [D, B] local [64, 1] (x, y, R, D)
*/
__kernel void sum_columns(__global const float *x, __global float *y, int R, int D) {
  const int j = get_global_id(0), b = get_global_id(1);
  if (j >= D) return;
  __global const float *col = x + (size_t)b * R * D + j;
  float acc = 0.0f;
  for (int r = 0; r < R; ++r) acc += col[(size_t)r * D];
  y[b * D + j] = acc;
}
