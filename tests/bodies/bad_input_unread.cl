// spec: matvec
// expect: rule input-unread
// Ignores both inputs and writes a constant to y (a and x are passed but never read).
/* ksmith plan
   launch matvec_zero global [M] local [32] (a, x, y, M, K)
*/
__kernel void matvec_zero(__global const float *a, __global const float *x, __global float *y, int M, int K) {
  const int i = get_global_id(0);
  if (i >= M) return;
  y[i] = 0.0f * K;
}
