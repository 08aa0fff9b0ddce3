// spec: sum_dim
// expect: rule type
// The f32 output y is taken as `__global int *`: the element type does not fit the tensor.
/* ksmith plan
   launch sum_columns global [B * D] local [64] (x, y, B, R, D)
*/
__kernel void sum_columns(__global const float *x, __global int *y, int B, int R, int D) {
  const int id = get_global_id(0);
  if (id >= B * D) return;
  const int b = id / D, j = id % D;
  float acc = 0.0f;
  for (int r = 0; r < R; ++r) acc += x[(b * R + r) * D + j];
  y[id] = as_int(acc);
}
