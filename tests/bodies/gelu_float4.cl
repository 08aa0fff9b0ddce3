// spec: gelu
// expect: accepted
// Vectorised GELU (the erf form): each work-item does 4 elements with vload4/vstore4;
// the last work-item handles a tail of 1-3 elements one by one (N*D need not divide by 4).
/* ksmith plan
   launch gelu4 global [(N * D + 3) / 4] local [64] (x, y, N, D)
*/
__kernel void gelu4(__global const float *x, __global float *y, int N, int D) {
  const int g = get_global_id(0);
  const int total = N * D;
  const int base = 4 * g;
  if (base + 4 <= total) {
    float4 v = vload4(g, x);
    vstore4(0.5f * v * (1.0f + erf(v * M_SQRT1_2_F)), g, y);
  } else {
    for (int e = base; e < total; ++e) {
      float v = x[e];
      y[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
    }
  }
}
