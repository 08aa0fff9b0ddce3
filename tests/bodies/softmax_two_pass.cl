// spec: softmax
// expect: accepted
// A work-group of 64 per row: the row's maximum and sum in one pass (online
// softmax), kept in scratch, then a second kernel writes the outputs.
/* ksmith plan
   scratch stats: f32[N, 2]               # per row: the maximum, the sum of exp
   launch row_stats global [N * 64] local [64] (x, stats, D)
   launch write_rows global [N * 64] local [64] (x, stats, y, D)
*/
__kernel void row_stats(__global const float *x, __global float *stats, int D) {
  __local float m_part[64], s_part[64];
  const int row = get_group_id(0), lid = get_local_id(0);
  float m = -INFINITY, s = 0.0f;
  for (int d = lid; d < D; d += 64) {
    float v = x[row * D + d];
    if (v > m) {
      s = s * exp(m - v) + 1.0f;
      m = v;
    } else {
      s += exp(v - m);
    }
  }
  m_part[lid] = m;
  s_part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = 32; step > 0; step /= 2) {
    if (lid < step) {
      float m2 = m_part[lid + step], s2 = s_part[lid + step];
      float mm = fmax(m_part[lid], m2);
      s_part[lid] = (s_part[lid] == 0.0f ? 0.0f : s_part[lid] * exp(m_part[lid] - mm)) +
                    (s2 == 0.0f ? 0.0f : s2 * exp(m2 - mm));
      m_part[lid] = mm;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    stats[2 * row] = m_part[0];
    stats[2 * row + 1] = s_part[0];
  }
}

__kernel void write_rows(__global const float *x, __global const float *stats, __global float *y, int D) {
  const int row = get_group_id(0), lid = get_local_id(0);
  const float m = stats[2 * row], inv = 1.0f / stats[2 * row + 1];
  for (int d = lid; d < D; d += 64) y[row * D + d] = exp(x[row * D + d] - m) * inv;
}
