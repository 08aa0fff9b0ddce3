// spec: matvec
// expect: plan is neither a tensor of the spec
// The plan passes `cols`, which is no tensor, scratch buffer or size of matvec (its size is K).
/* ksmith plan
   launch matvec_naive global [M] local [32] (a, x, y, M, cols)
*/
__kernel void matvec_naive(__global const float *a, __global const float *x, __global float *y, int M, int cols) {
  const int i = get_global_id(0);
  if (i >= M) return;
  float acc = 0.0f;
  for (int k = 0; k < cols; ++k) acc += a[i * cols + k] * x[k];
  y[i] = acc;
}
