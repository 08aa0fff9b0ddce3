// spec: matmul
// expect: accepted
// A tiled GEMM: a 16x16 work-group stages 16x16 tiles of a and b in local memory
// (2-D launch); ids and tile loads past N are guarded (the check size N=37 is not a multiple of 16).
/* ksmith plan
   launch matmul_tiled global [N, N] local [16, 16] (a, b, c, N)   # dim 0: column j, dim 1: row i
*/
#define TILE 16

__kernel void matmul_tiled(__global const float *a, __global const float *b, __global float *c, int N) {
  __local float a_tile[TILE][TILE];
  __local float b_tile[TILE][TILE];
  const int j = get_global_id(0), i = get_global_id(1);
  const int lj = get_local_id(0), li = get_local_id(1);
  float acc = 0.0f;
  for (int k0 = 0; k0 < N; k0 += TILE) {
    const int ka = k0 + lj, kb = k0 + li;
    a_tile[li][lj] = (i < N && ka < N) ? a[i * N + ka] : 0.0f;
    b_tile[li][lj] = (kb < N && j < N) ? b[kb * N + j] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc += a_tile[li][k] * b_tile[k][lj];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i < N && j < N) c[i * N + j] = acc;
}
