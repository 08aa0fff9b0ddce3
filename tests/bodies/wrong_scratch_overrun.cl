// spec: gelu
// expect: wrong past the end
// Correct outputs, but it writes one element past the end of its scratch buffer:
// the guards around every buffer name the breach.
/* ksmith plan
   scratch tmp: f32[N * D]
   launch stage global [N * D] local [64] (x, tmp, N, D)
   launch finish global [N * D] local [64] (tmp, y, N, D)
*/
__kernel void stage(__global const float *x, __global float *tmp, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D) return;
  const float v = x[e];
  tmp[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
  if (e == N * D - 1) tmp[e + 1] = 0.0f;
}

__kernel void finish(__global const float *tmp, __global float *y, int N, int D) {
  const int e = get_global_id(0);
  if (e < N * D) y[e] = tmp[e];
}
