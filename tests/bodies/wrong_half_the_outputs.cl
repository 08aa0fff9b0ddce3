// spec: gelu
// expect: wrong incorrect at N=7, D=129
// Clang has nothing against it (y is written), but only the first half of the
// outputs is: the check at the odd check sizes finds the rest poisoned.
/* ksmith plan
   launch half_rows global [N * D / 2] local [64] (x, y, N, D)
*/
__kernel void half_rows(__global const float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D / 2) return;
  const float v = x[e];
  y[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}
