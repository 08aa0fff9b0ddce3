// spec: matvec
// expect: rule input-written
// Stores through a pointer variable that aliases the input a (a scratch row of a
// is reused as an accumulator), through a conditional and pointer arithmetic.
/* ksmith plan
   launch matvec_alias global [M] local [32] (a, x, y, M, K)
*/
__kernel void matvec_alias(__global float *a, __global const float *x, __global float *y, int M, int K) {
  const int i = get_global_id(0);
  if (i >= M) return;
  __global float *row = a + i * K;
  __global float *acc = K > 0 ? row : y + i;
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += row[k] * x[k];
  *acc = s;
  y[i] = s;
}
