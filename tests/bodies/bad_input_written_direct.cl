// spec: gelu
// expect: rule input-written
// Computes GELU in place in the input x (a direct store to x), then copies x to y.
/* ksmith plan
   launch gelu_in_place global [N * D] local [64] (x, y, N, D)
*/
__kernel void gelu_in_place(__global float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D) return;
  const float v = x[e];
  x[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
  y[e] = x[e];
}
