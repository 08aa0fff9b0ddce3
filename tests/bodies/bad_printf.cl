// spec: sum_dim
// expect: rule printf
// A correct column sum that also prints from work-item 0: printf is refused.
/* ksmith plan
   launch sum_columns global [B * D] local [64] (x, y, B, R, D)
*/
__kernel void sum_columns(__global const float *x, __global float *y, int B, int R, int D) {
  const int id = get_global_id(0);
  if (id >= B * D) return;
  const int b = id / D, j = id % D;
  float acc = 0.0f;
  for (int r = 0; r < R; ++r) acc += x[(b * R + r) * D + j];
  if (id == 0) printf("y[0] = %f\n", acc);
  y[id] = acc;
}
