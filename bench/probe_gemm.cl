// The hand-written GEMM of bench/gpu_gemm_probe.sh (bench/cl_probe.cpp times it):
// c[m,n] = sum_k a[m,k] * B, B = w[n,k] (TRANS_B) or b[k,n]. 128x128 tile, 16x16 work-items, 8x8 outputs each in 4x4 chunks, panels in local memory with k
// as rows (a transposed; w transposed), rows padded by 4.
#ifndef KT
#define KT 16
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef NBUF
#define NBUF 1
#endif
#ifndef TRANS_B
#define TRANS_B 1
#endif
#define LD 132
#ifndef INT32
#define IDX(x) (size_t)(x)
#else
#define IDX(x) (x)
#endif
#define TILE (KT * LD)
#define NCOPY (KT * 128 / 256)      /* scalars per work-item per panel */
#define NCOPY4 (NCOPY / 4)

#if VEC
#define REG float4
#define NREG NCOPY4
#else
#define REG float
#define NREG NCOPY
#endif

// Loads work-item tid's part of the k-major panel of src (rows row0.., k from k0) into r.
inline void load_rows(__global const float *src, int row0, int ld, int k0, int tid, REG *r) {
#if VEC
  for (int i = 0; i < NCOPY4; ++i) {
    const int f = i * 256 + tid, row = f / (KT / 4), k4 = f % (KT / 4) * 4;
    r[i] = vload4(0, src + (size_t)(row0 + row) * ld + k0 + k4);
  }
#else
  for (int i = 0; i < NCOPY; ++i) {
    const int f = i * 256 + tid, row = f / KT, k = f % KT;
    r[i] = src[IDX(row0 + row) * ld + k0 + k];
  }
#endif
}
inline void store_rows(__local float *dst, int tid, const REG *r) {
#if VEC
  for (int i = 0; i < NCOPY4; ++i) {
    const int f = i * 256 + tid, row = f / (KT / 4), k4 = f % (KT / 4) * 4;
    dst[(k4 + 0) * LD + row] = r[i].x;
    dst[(k4 + 1) * LD + row] = r[i].y;
    dst[(k4 + 2) * LD + row] = r[i].z;
    dst[(k4 + 3) * LD + row] = r[i].w;
  }
#else
  for (int i = 0; i < NCOPY; ++i) {
    const int f = i * 256 + tid, row = f / KT, k = f % KT;
    dst[k * LD + row] = r[i];
  }
#endif
}
// b[k, n]: rows of k already; copy as is.
inline void load_cols(__global const float *src, int n0, int ld, int k0, int tid, REG *r) {
#if VEC
  for (int i = 0; i < NCOPY4; ++i) {
    const int f = i * 256 + tid, k = f / 32, n4 = f % 32 * 4;
    r[i] = vload4(0, src + (size_t)(k0 + k) * ld + n0 + n4);
  }
#else
  for (int i = 0; i < NCOPY; ++i) {
    const int f = i * 256 + tid, k = f / 128, n = f % 128;
    r[i] = src[IDX(k0 + k) * ld + n0 + n];
  }
#endif
}
inline void store_cols(__local float *dst, int tid, const REG *r) {
#if VEC
  for (int i = 0; i < NCOPY4; ++i) {
    const int f = i * 256 + tid, k = f / 32, n4 = f % 32 * 4;
    vstore4(r[i], 0, dst + k * LD + n4);
  }
#else
  for (int i = 0; i < NCOPY; ++i) {
    const int f = i * 256 + tid, k = f / 128, n = f % 128;
    dst[k * LD + n] = r[i];
  }
#endif
}
#if TRANS_B
#define LOAD_B(k0, r) load_rows(b, no * 128, K, k0, tid, r)
#define STORE_B(dst, r) store_rows(dst, tid, r)
#else
#define LOAD_B(k0, r) load_cols(b, no * 128, N, k0, tid, r)
#define STORE_B(dst, r) store_cols(dst, tid, r)
#endif

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm(__global const float *restrict a, __global const float *restrict b, __global float *restrict c) {
  __local float a_s[NBUF][TILE] __attribute__((aligned(16)));
  __local float b_s[NBUF][TILE] __attribute__((aligned(16)));
  const int mo = get_group_id(1), no = get_group_id(0);
  const int mt = get_local_id(1), nt = get_local_id(0), tid = mt * 16 + nt;
  float acc[8][8];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  REG ra[NREG], rb[NREG];
#if PREFETCH
  load_rows(a, mo * 128, K, 0, tid, ra);
  LOAD_B(0, rb);
#endif
  for (int ko = 0; ko < K / KT; ++ko) {
    const int buf = NBUF == 1 ? 0 : ko & 1;
#if !PREFETCH
    load_rows(a, mo * 128, K, ko * KT, tid, ra);
    LOAD_B(ko * KT, rb);
#endif
#ifdef ORDER_BA
    STORE_B(b_s[buf], rb);
    store_rows(a_s[buf], tid, ra);
#else
    store_rows(a_s[buf], tid, ra);
    STORE_B(b_s[buf], rb);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#if PREFETCH
    if (ko + 1 < K / KT) {
#ifdef ORDER_BA
      LOAD_B((ko + 1) * KT, rb);
      load_rows(a, mo * 128, K, (ko + 1) * KT, tid, ra);
#else
      load_rows(a, mo * 128, K, (ko + 1) * KT, tid, ra);
      LOAD_B((ko + 1) * KT, rb);
#endif
    }
#endif
#ifdef UNROLL_K
#pragma unroll UNROLL_K
#endif
    for (int ki = 0; ki < KT; ++ki) {
      float av[8], bv[8];
      const float4 a0 = vload4(0, a_s[buf] + ki * LD + mt * 4), a1 = vload4(0, a_s[buf] + ki * LD + 64 + mt * 4);
      const float4 b0 = vload4(0, b_s[buf] + ki * LD + nt * 4), b1 = vload4(0, b_s[buf] + ki * LD + 64 + nt * 4);
      av[0] = a0.x; av[1] = a0.y; av[2] = a0.z; av[3] = a0.w; av[4] = a1.x; av[5] = a1.y; av[6] = a1.z; av[7] = a1.w;
      bv[0] = b0.x; bv[1] = b0.y; bv[2] = b0.z; bv[3] = b0.w; bv[4] = b1.x; bv[5] = b1.y; bv[6] = b1.z; bv[7] = b1.w;
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
    }
    if (NBUF == 1) barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 8; ++i) {
    const int m = mo * 128 + (i / 4) * 64 + mt * 4 + i % 4;
    for (int j = 0; j < 8; j += 4) {
      const int n = no * 128 + (j / 4) * 64 + nt * 4;
      vstore4((float4)(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), 0, c + (size_t)m * N + n);
    }
  }
}

__kernel void naive(__global const float *restrict a, __global const float *restrict b, __global float *restrict c) {
  const int n = get_global_id(0), m = get_global_id(1);
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += a[(size_t)m * K + k] * (TRANS_B ? b[(size_t)n * K + k] : b[(size_t)k * N + n]);
  c[(size_t)m * N + n] = s;
}
