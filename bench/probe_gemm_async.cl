// The GEMM of bench/probe_gemm.cl (128x128 tile, 16x16 work-items, 8x8 outputs each
// in 4x4 chunks) with its panels copied by asynchronous global-to-local copies
// (PTX cp.async, sm_80 and later, through NVIDIA OpenCL's inline assembly) in an
// NSTAGE-deep ring: no registers stage the next panels and one barrier a step.
// c[m,n] = sum_k a[m,k] * B, B = w[n,k] (TRANS_B) or b[k,n].
// ASYNC=0 copies synchronously through the same ring (any device: checks the indices).
// ROWS_A=1 keeps a's panel as it is stored (m rows of k, 16-byte copies) and reads it
// by scalars; ROWS_A=0 transposes it (k rows of m, 4-byte copies, float4 reads).
// B_SCALAR=1 copies b's panel (TRANS_B=0) by 4-byte copies too.
// TN=16: 8 x 16 outputs a work-item (a 128 x 256 tile). WARP_SHAPE=1: a warp's 32
// work-items cover 4 x 8 of the 16 x 16 (two float4 addresses of a, eight of b a read),
// where the flat order gives 2 x 16.
// CVTA=1 converts the local pointer with cvta.to.shared (if the compiler's local
// pointers were generic addresses).
#ifndef KT
#define KT 8
#endif
#ifndef NSTAGE
#define NSTAGE 3
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef ROWS_A
#define ROWS_A 0
#endif
#ifndef ASYNC
#define ASYNC 1
#endif
#ifndef B_SCALAR
#define B_SCALAR 0
#endif
#ifndef CVTA
#define CVTA 0
#endif
#ifndef TN
#define TN 8
#endif
#ifndef WARP_SHAPE
#define WARP_SHAPE 0
#endif
#define BN (16 * TN)
#define LDB (BN + 4)
#define LD 132
#define LDA (KT + 4)
#define TILE (KT * LD)
#define BTILE (KT * LDB)
#if ROWS_A
#define ATILE (128 * LDA)
#else
#define ATILE TILE
#endif
#define KSTEPS (K / KT)
#define STR(x) #x
#define XSTR(x) STR(x)

#if ASYNC
#if CVTA
#define CP_ASYNC(kind, bytes, dst, src)                                                                  \
  asm volatile("{ .reg .u64 s; .reg .u32 t; cvta.to.shared.u64 s, %0; cvt.u32.u64 t, s;\n"            \
               "cp.async." kind ".shared.global [t], [%1], " bytes "; }\n" ::"l"((ulong)(dst)), \
               "l"((ulong)(src))                                                                       \
               : "memory")
#else
#define CP_ASYNC(kind, bytes, dst, src) \
  asm volatile("cp.async." kind ".shared.global [%0], [%1], " bytes ";\n" ::"r"((uint)(ulong)(dst)), "l"((ulong)(src)) : "memory")
#endif
inline void cp4(__local float *dst, __global const float *src) { CP_ASYNC("ca", "4", dst, src); }
inline void cp16(__local float *dst, __global const float *src) { CP_ASYNC("cg", "16", dst, src); }
#define COMMIT() asm volatile("cp.async.commit_group;\n" ::: "memory")
#define WAIT_PENDING(n) asm volatile("cp.async.wait_group " XSTR(n) ";\n" ::: "memory")
#else
inline void cp4(__local float *dst, __global const float *src) { *dst = *src; }
inline void cp16(__local float *dst, __global const float *src) { vstore4(vload4(0, src), 0, dst); }
#define COMMIT()
#define WAIT_PENDING(n)
#endif

// Step `step`'s panels into ring slot `slot`.
inline void issue(__global const float *a, __global const float *b, __local float *as, __local float *bs, int mo,
                  int no, int step, int tid) {
#if ROWS_A
  for (int i = 0; i < KT * 128 / 4 / 256; ++i) {
    const int f = i * 256 + tid, row = f / (KT / 4), k4 = f % (KT / 4) * 4;
    cp16(as + row * LDA + k4, a + (size_t)(mo * 128 + row) * K + step * KT + k4);
  }
#else
  for (int i = 0; i < KT * 128 / 256; ++i) {
    const int f = i * 256 + tid, row = f / KT, k = f % KT;
    cp4(as + k * LD + row, a + (size_t)(mo * 128 + row) * K + step * KT + k);
  }
#endif
#if TRANS_B
  for (int i = 0; i < KT * BN / 256; ++i) {
    const int f = i * 256 + tid, row = f / KT, k = f % KT;
    cp4(bs + k * LDB + row, b + (size_t)(no * BN + row) * K + step * KT + k);
  }
#elif B_SCALAR
  for (int i = 0; i < KT * BN / 256; ++i) {
    const int f = i * 256 + tid, k = f / BN, n = f % BN;
    cp4(bs + k * LDB + n, b + (size_t)(step * KT + k) * N + no * BN + n);
  }
#else
  for (int i = 0; i < KT * BN / 4 / 256; ++i) {
    const int f = i * 256 + tid, k = f / (BN / 4), n4 = f % (BN / 4) * 4;
    cp16(bs + k * LDB + n4, b + (size_t)(step * KT + k) * N + no * BN + n4);
  }
#endif
}

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm(__global const float *restrict a, __global const float *restrict b, __global float *restrict c) {
  __local float a_s[NSTAGE][ATILE] __attribute__((aligned(16)));
  __local float b_s[NSTAGE][BTILE] __attribute__((aligned(16)));
  const int mo = get_group_id(1), no = get_group_id(0);
  const int tid = get_local_id(1) * 16 + get_local_id(0);
#if WARP_SHAPE
  const int warp = tid / 32, lane = tid % 32, mt = warp / 2 * 4 + lane / 8, nt = warp % 2 * 8 + lane % 8;
#else
  const int mt = tid / 16, nt = tid % 16;
#endif
  float acc[8][TN];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int s = 0; s < NSTAGE - 1; ++s) {
    issue(a, b, a_s[s], b_s[s], mo, no, s, tid);
    COMMIT();
  }
  int slot = 0, next = NSTAGE - 1;
  for (int ko = 0; ko < KSTEPS; ++ko) {
    WAIT_PENDING(NSTAGE - 2);
    barrier(CLK_LOCAL_MEM_FENCE);
    // Every work-item is past the step that read slot `next` (the barrier above).
    if (ko + NSTAGE - 1 < KSTEPS) issue(a, b, a_s[next], b_s[next], mo, no, ko + NSTAGE - 1, tid);
    COMMIT();
    __local const float *as = a_s[slot], *bs = b_s[slot];
#pragma unroll
    for (int ki = 0; ki < KT; ++ki) {
      float av[8], bv[TN];
#if ROWS_A
      for (int i = 0; i < 8; ++i) av[i] = as[((i / 4) * 64 + mt * 4 + i % 4) * LDA + ki];
#else
      const float4 a0 = vload4(0, as + ki * LD + mt * 4), a1 = vload4(0, as + ki * LD + 64 + mt * 4);
      av[0] = a0.x; av[1] = a0.y; av[2] = a0.z; av[3] = a0.w; av[4] = a1.x; av[5] = a1.y; av[6] = a1.z; av[7] = a1.w;
#endif
      for (int q = 0; q < TN / 4; ++q) {
        const float4 b4 = vload4(0, bs + ki * LDB + q * 64 + nt * 4);
        bv[q * 4] = b4.x; bv[q * 4 + 1] = b4.y; bv[q * 4 + 2] = b4.z; bv[q * 4 + 3] = b4.w;
      }
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    slot = slot == NSTAGE - 1 ? 0 : slot + 1;
    next = next == NSTAGE - 1 ? 0 : next + 1;
  }
  for (int i = 0; i < 8; ++i) {
    const int m = mo * 128 + (i / 4) * 64 + mt * 4 + i % 4;
    for (int j = 0; j < TN; j += 4) {
      const int n = no * BN + (j / 4) * 64 + nt * 4;
      vstore4((float4)(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), 0, c + (size_t)m * N + n);
    }
  }
}
