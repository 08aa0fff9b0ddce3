// spec: matmul
// expect: plan has 2 global and 1 local dimensions
// A 2-D global range with a 1-D local size: the plan's dimension counts differ.
/* ksmith plan
   launch matmul_2d global [N, N] local [16] (a, b, c, N)
*/
__kernel void matmul_2d(__global const float *a, __global const float *b, __global float *c, int N) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= N || j >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < N; ++k) acc += a[i * N + k] * b[k * N + j];
  c[i * N + j] = acc;
}
