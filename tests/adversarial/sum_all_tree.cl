// sum_all.ks as sum_all.sched computes it, by hand for any N: one work-group of 256
// work-items, each summing every 256th value, then a tree in local memory. Honest, it
// is within 1e-6 of the exact sum at a million values.
//   CHEAT_DROP_ONE  at the timed sizes (the check sizes stay right), the first value
//                   of magnitude 8 or more that work-item 0 meets is left out. A sum of
//                   a million values of mixed signs is some thousands, so the value
//                   moves it by about 1e-3: the timed sizes' reference must catch it.
__kernel void s(__global const float *x, __global float *s) {
  __local float part[256];
  const int t = get_local_id(0);
  float acc = 0.0f;
#ifdef CHEAT_DROP_ONE
  bool dropped = N < 100000 || t != 0;
#endif
  for (int i = t; i < N; i += 256) {
#ifdef CHEAT_DROP_ONE
    if (!dropped && fabs(x[i]) >= 8.0f) {
      dropped = true;
      continue;
    }
#endif
    acc += x[i];
  }
  part[t] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = 128; stride > 0; stride /= 2) {
    if (t < stride) part[t] += part[t + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) s[0] = part[0];
}
