// spec: batched_matmul
// expect: accepted
// A 3-D launch (column j, row i, batch z), one work-item per output element,
// guarded on M and N; b read through the batch's pointer.
/* ksmith plan
   launch bmm global [N, M, B] local [8, 8, 1] (a, b, c, M, K, N)
*/
__kernel void bmm(__global const float *a, __global const float *b, __global float *c, int M, int K, int N) {
  const int j = get_global_id(0), i = get_global_id(1), z = get_global_id(2);
  if (i >= M || j >= N) return;
  __global const float *az = a + (size_t)z * M * K + i * K;
  __global const float *bz = b + (size_t)z * K * N + j;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += az[k] * bz[k * N];
  c[(size_t)z * M * N + i * N + j] = acc;
}
