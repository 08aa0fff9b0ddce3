// examples/matmul.ks by hand, a work-item an output as its naive program launches
// them (groups of 256 along x). Honest, it sums in f32 and passes everywhere.
//   CHEAT_TF32  at the timed sizes (the check sizes stay right), each operand rounded
//               to TF32 first, as a matrix unit's plain TF32 instruction reads it (10
//               bits of mantissa): an f32 spec computed in less precision than it
//               declares. Its error, about 1e-3 of each product, is far past the
//               fp32 rounding bound at the timed sizes: the reference must catch it.
//   CHEAT_F16   the same with each operand rounded to f16 (vstore_half_rte, 10 bits of
//               mantissa and f16's range): an f32 spec computed in half precision.
#ifdef CHEAT_TF32
float operand(float x) { return N < 64 ? x : as_float((as_uint(x) + 0x1000u) & 0xffffe000u); }
#elif defined(CHEAT_F16)
float operand(float x) {
  if (N < 64) return x;
  ushort bits;
  vstore_half_rte(x, 0, (__private half *)&bits);
  return vload_half(0, (__private half *)&bits);
}
#else
float operand(float x) { return x; }
#endif

__kernel void c(__global const float *a, __global const float *b, __global float *c) {
  const int id = get_global_id(0);
  if (id >= N * N) return;
  const int i = id / N, j = id % N;
  float acc = 0.0f;
  for (int k = 0; k < N; ++k) acc += operand(a[i * N + k]) * operand(b[k * N + j]);
  c[i * N + j] = acc;
}
