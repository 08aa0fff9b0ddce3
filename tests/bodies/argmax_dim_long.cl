// spec: argmax_dim
// expect: accepted
// The i64 output as __global long *: one work-item per (b, j) scans R and keeps the
// first index of the maximum (strict >, so ties go to the lowest r).
/* ksmith plan
   launch argmax_columns global [B * D] local [64] (x, index, B, R, D)
*/
__kernel void argmax_columns(__global const float *x, __global long *index, int B, int R, int D) {
  const int id = get_global_id(0);
  if (id >= B * D) return;
  const int b = id / D, j = id % D;
  __global const float *col = x + (size_t)b * R * D + j;
  float best = col[0];
  long arg = 0;
  for (int r = 1; r < R; ++r) {
    float v = col[(size_t)r * D];
    if (v > best) {
      best = v;
      arg = r;
    }
  }
  index[id] = arg;
}
