// spec: softmax
// expect: rule pointer-from-integer
// Rebuilds the output pointer from an integer address (ulong cast back to a pointer).
/* ksmith plan
   launch softmax_naive global [N] local [16] (x, y, N, D)
*/
__kernel void softmax_naive(__global const float *x, __global float *y, int N, int D) {
  const int r = get_global_id(0);
  if (r >= N) return;
  const ulong address = (ulong)y + (ulong)(r * D) * sizeof(float);
  __global float *out = (__global float *)address;
  float m = -INFINITY, s = 0.0f;
  for (int d = 0; d < D; ++d) m = fmax(m, x[r * D + d]);
  for (int d = 0; d < D; ++d) s += exp(x[r * D + d] - m);
  for (int d = 0; d < D; ++d) out[d] = exp(x[r * D + d] - m) / s;
  y[r * D] = out[0];
}
