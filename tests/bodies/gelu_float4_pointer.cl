// spec: gelu
// expect: accepted
// GELU with vector pointer parameters (`__global const float4 *`): one float4 per
// work-item, and the tail of N*D % 4 elements done by the last work-item through float views.
/* ksmith plan
   launch gelu_vec global [(N * D + 3) / 4] local [128] (x, y, N, D)
*/
float gelu_scalar(float v) { return 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F)); }

__kernel void gelu_vec(__global const float4 *x, __global float4 *y, int N, int D) {
  const int g = get_global_id(0), total = N * D, full = total / 4;
  if (g < full) {
    const float4 v = x[g];
    y[g] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
  } else if (g == full) {
    __global const float *xs = (__global const float *)x;
    __global float *ys = (__global float *)y;
    for (int e = 4 * full; e < total; ++e) ys[e] = gelu_scalar(xs[e]);
  }
}
