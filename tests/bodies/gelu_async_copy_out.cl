// spec: gelu
// expect: accepted
// Writes its rows with async_work_group_copy from local memory.
/* ksmith plan
   launch copy_rows global [N * 64] local [64] (x, y, D)
*/
__kernel void copy_rows(__global const float *x, __global float *y, int D) {
  __local float buf[1024];
  const int r = get_group_id(0), lid = get_local_id(0);
  for (int d0 = 0; d0 < D; d0 += 1024) {
    int n = min(1024, D - d0);
    for (int d = lid; d < n; d += 64) { float v = x[r * D + d0 + d]; buf[d] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F)); }
    barrier(CLK_LOCAL_MEM_FENCE);
    event_t ev = async_work_group_copy(y + r * D + d0, buf, n, 0);
    wait_group_events(1, &ev);
  }
}
