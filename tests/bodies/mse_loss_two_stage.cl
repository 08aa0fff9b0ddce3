// spec: mse_loss
// expect: accepted
// A two-stage reduction to the scalar loss: 64 work-groups each write a partial sum
// of squared differences to scratch, then one work-group of 64 adds them and divides by N*D.
/* ksmith plan
   scratch partial: f32[64]
   launch partial_sums global [64 * 256] local [256] (prediction, target, partial, N, D)
   launch final_sum global [64] local [64] (partial, loss, N, D)
*/
__kernel void partial_sums(__global const float *prediction, __global const float *target, __global float *partial,
                           int N, int D) {
  __local float red[256];
  const int lid = get_local_id(0);
  const int total = N * D, stride = get_global_size(0);
  float acc = 0.0f;
  for (int e = get_global_id(0); e < total; e += stride) {
    float t = prediction[e] - target[e];
    acc += t * t;
  }
  red[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 128; w > 0; w >>= 1) {
    if (lid < w) red[lid] += red[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = red[0];
}

__kernel void final_sum(__global const float *partial, __global float *loss, int N, int D) {
  __local float red[64];
  const int lid = get_local_id(0);
  red[lid] = partial[lid];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = 32; w > 0; w >>= 1) {
    if (lid < w) red[lid] += red[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) loss[0] = red[0] / ((float)N * (float)D);
}
