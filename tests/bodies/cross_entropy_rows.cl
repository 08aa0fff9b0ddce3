// spec: cross_entropy
// expect: accepted
// The i64 target as `__global const long *`: one work-item per row writes its loss
// (log-sum-exp minus the target's logit) to scratch; one work-group of 256 sums them / N.
/* ksmith plan
   scratch row_loss: f32[N]
   launch row_losses global [N] local [64] (logits, target, row_loss, N, C)
   launch mean_loss global [256] local [256] (row_loss, loss, N)
*/
__kernel void row_losses(__global const float *logits, __global const long *target, __global float *row_loss, int N,
                         int C) {
  const int n = get_global_id(0);
  if (n >= N) return;
  __global const float *row = logits + (size_t)n * C;
  float m = -INFINITY;
  for (int c = 0; c < C; ++c) m = fmax(m, row[c]);
  float s = 0.0f;
  for (int c = 0; c < C; ++c) s += exp(row[c] - m);
  row_loss[n] = log(s) + m - row[target[n]];
}

__kernel void mean_loss(__global const float *row_loss, __global float *loss, int N) {
  __local float red[256];
  const int lid = get_local_id(0);
  float acc = 0.0f;
  for (int n = lid; n < N; n += 256) acc += row_loss[n];
  red[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 128; w > 0; w >>= 1) {
    if (lid < w) red[lid] += red[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) *loss = red[0] / N;
}
