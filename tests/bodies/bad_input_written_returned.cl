// spec: gelu
// expect: rule input-written
// Stores to the input through the pointer a helper returns.
/* ksmith plan
   launch k global [N * D] local [64] (x, y, N, D)
*/
__global float *pick(__global float *p) { return p; }
__kernel void k(__global float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D) return;
  float v = x[e];
  pick(x)[e] = 0.0f;
  y[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}
