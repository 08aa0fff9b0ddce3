// spec: gelu
// expect: rule output-not-written
// Computes GELU but only reads the output (accumulates y into a local value); never stores to y.
/* ksmith plan
   launch gelu_flat global [N * D] local [64] (x, y, N, D)
*/
__kernel void gelu_flat(__global const float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D) return;
  const float v = x[e];
  float out = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
  out += 0.0f * y[e];
}
