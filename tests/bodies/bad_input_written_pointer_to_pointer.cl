// spec: gelu
// expect: rule input-written
// Stores to the input through a pointer to its pointer: (*pp)[e].
/* ksmith plan
   launch k global [N * D] local [64] (x, y, N, D)
*/
__kernel void k(__global float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D) return;
  __global float **pp = &x;
  float v = x[e];
  (*pp)[e] = 0.0f;
  y[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}
