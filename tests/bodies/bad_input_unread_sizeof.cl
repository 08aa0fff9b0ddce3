// spec: gelu
// expect: rule input-unread
// Names the input only inside sizeof, which reads nothing.
/* ksmith plan
   launch k global [N * D] local [64] (x, y, N, D)
*/
__kernel void k(__global const float *x, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D) return;
  y[e] = (float)sizeof(x[0]);
}
