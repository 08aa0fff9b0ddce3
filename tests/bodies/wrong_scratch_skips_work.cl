// spec: gelu
// expect: wrong reuses its intermediate done
// Clang has nothing against it, but it keeps a mark in its scratch buffer and skips
// all work when the last run left the mark there: a check trial run on what the last
// one left in its scratch buffers catches it.
/* ksmith plan
   scratch done: i32[1]
   launch compute global [N * D] local [64] (x, y, done, N, D)
   launch mark global [1] local [1] (done)
*/
__kernel void compute(__global const float *x, __global float *y, __global const int *done, int N, int D) {
  const int e = get_global_id(0);
  if (e >= N * D || done[0] == 12345) return;
  const float v = x[e];
  y[e] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}

__kernel void mark(__global int *done) { done[0] = 12345; }
