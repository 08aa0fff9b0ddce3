// spec: softmax
// expect: rule type
// The size D is passed (as a 32-bit int) to a parameter declared `__global float *`.
/* ksmith plan
   launch softmax_naive global [N] local [16] (x, y, D)
*/
__kernel void softmax_naive(__global const float *x, __global float *y, __global float *D) {
  const int r = get_global_id(0);
  const int n = (int)D[0];
  float m = -INFINITY, s = 0.0f;
  for (int d = 0; d < n; ++d) m = fmax(m, x[r * n + d]);
  for (int d = 0; d < n; ++d) s += exp(x[r * n + d] - m);
  for (int d = 0; d < n; ++d) y[r * n + d] = exp(x[r * n + d] - m) / s;
}
