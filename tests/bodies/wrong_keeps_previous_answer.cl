// spec: gelu
// expect: wrong keeps a previous answer
// It skips its work where the output already holds a number (the last run's
// answer): right from poisoned outputs, wrong when new inputs meet old outputs.
/* ksmith plan
   launch keep global [N * D] local [64] (x, y, N, D)
*/
__kernel void keep(__global const float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D || !isnan(y[e])) return;
  const float v = x[e];
  y[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}
