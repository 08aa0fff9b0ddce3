// examples/softmax.ks as a kernel body: the naive program's four kernels, written by
// hand for any sizes (N and D are macros). The evaluator must accept it.
__kernel void row_max(__global const float *x, __global float *row_max) {
  int n = get_global_id(0);
  if (n >= N) return;
  float m = -INFINITY;
  for (int d = 0; d < D; ++d) m = fmax(m, x[n * D + d]);
  row_max[n] = m;
}

__kernel void e(__global const float *x, __global const float *row_max, __global float *e) {
  int i = get_global_id(0);
  if (i >= N * D) return;
  e[i] = exp(x[i] - row_max[i / D]);
}

__kernel void total(__global const float *e, __global float *total) {
  int n = get_global_id(0);
  if (n >= N) return;
  float s = 0.0f;
  for (int d = 0; d < D; ++d) s += e[n * D + d];
  total[n] = s;
}

__kernel void y(__global float *y, __global const float *e, __global const float *total) {
  int i = get_global_id(0);
  if (i >= N * D) return;
  y[i] = e[i] / total[i / D];
}
