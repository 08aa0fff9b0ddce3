// spec: matvec
// expect: rule arity
// The launch passes 4 arguments (a, x, y, K) but the kernel also wants M: 5 parameters.
/* ksmith plan
   launch matvec_naive global [M] local [32] (a, x, y, K)
*/
__kernel void matvec_naive(__global const float *a, __global const float *x, __global float *y, int M, int K) {
  const int i = get_global_id(0);
  if (i >= M) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[i * K + k] * x[k];
  y[i] = acc;
}
