// spec: matmul
// expect: rule kernel
// The plan launches `matmull` but the body defines `matmul_naive`: no such __kernel.
/* ksmith plan
   launch matmull global [N * N] local [64] (a, b, c, N)
*/
__kernel void matmul_naive(__global const float *a, __global const float *b, __global float *c, int N) {
  const int id = get_global_id(0);
  if (id >= N * N) return;
  const int i = id / N, j = id % N;
  float acc = 0.0f;
  for (int k = 0; k < N; ++k) acc += a[i * N + k] * b[k * N + j];
  c[id] = acc;
}
