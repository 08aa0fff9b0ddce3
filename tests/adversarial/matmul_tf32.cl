// examples/matmul.ks by hand, a work-item an output as its naive program launches
// them (groups of 256 along x). Honest, it sums in f32 and passes everywhere.
//   CHEAT_TF32  at the timed sizes (the check sizes stay right), each operand rounded
//               to TF32 first, as a matrix unit's plain TF32 instruction reads it (10
//               bits of mantissa): an f32 spec computed in less precision than it
//               declares. Its error, about 1e-3 of each product, is far past the
//               fp32 rounding bound at the timed sizes: the reference must catch it.
#ifdef CHEAT_TF32
float operand(float x) { return N < 64 ? x : as_float((as_uint(x) + 0x1000u) & 0xffffe000u); }
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
