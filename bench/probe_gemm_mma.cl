// The tensor-core fp32 GEMM probe of bench/gpu_mma_probe.sh (bench/cl_probe.cpp times it,
// bench/mma_error.py measures its error): c[M][N] = sum_k a[M][K] * b[K][N], row-major,
// M, N, K multiples of the 128 x 128 block tile and of KT. Work-group 256 = 8 warps, local
// size (256,1,1), global (N/128*256, M/128, 1); each warp a 64 x 32 tile of 4 x 4
// mma.m16n8k8 instruction tiles (accumulators in registers); panels of a (128 x KT, k
// contiguous) and b (KT x 128, n contiguous) staged through local memory, rows padded
// (+4, +8) so that the fragment reads hit 32 distinct banks; the next panels are
// prefetched into registers. MODE:
//   FFMA      fp32 FMAs per thread on the same tiles (each thread the outputs its mma
//             accumulator fragment would hold): the fp32 reference,
//   TF32      operands rounded by cvt.rna.tf32.f32, one mma per instruction tile,
//   X3        3xTF32: big = tf32(x), small = tf32(x - big); a_small*b_big, a_big*b_small,
//             a_big*b_big into one accumulator, small products first,
//   X3SPLIT   the two correction products into a second accumulator set, added at the end,
//   X3KSPLIT  X3SPLIT with big*big restarted every KCHUNK k (a fresh register set, summed
//             into the total with fp32 adds): is the mma's own accumulation the error?
//   X3K       X3 (all three products in one set) restarted every KCHUNK k likewise; with
//             KCHUNK=8 every mma starts from zero and all accumulation is fp32 FADD.
// EMULATE=1 replaces the PTX (mma, cvt) by OpenCL C through local memory that follows the
// PTX ISA's fragment layouts, so that the index math can be checked on a CPU (PoCL).
#define FFMA 0
#define TF32 1
#define X3 2
#define X3SPLIT 3
#define X3KSPLIT 4
#define X3K 5
#ifndef MODE
#define MODE FFMA
#endif
#ifndef KT
#define KT 32
#endif
#ifndef KCHUNK
#define KCHUNK 256
#endif
#ifndef EMULATE
#define EMULATE 0
#endif
#define BM 128
#define BN 128
#define LDA (KT + 4)  /* a_s[m][k]: a0 lanes hit banks 4g + t */
#define LDB (BN + 8)  /* b_s[k][n]: b0 lanes hit banks 8t + g */
#define MI 4          /* m16 tiles per warp (64 rows) */
#define NI 4          /* n8 tiles per warp (32 columns) */
#define NLD (KT / 8)  /* float4 per work-item per panel */
#define TFMASK 0xffffe000u
#define UNROLL _Pragma("unroll")

#if MODE == X3SPLIT || MODE == X3KSPLIT
#define HAS_SMALL 1
#else
#define HAS_SMALL 0
#endif
#if MODE == X3KSPLIT || MODE == X3K
#define HAS_CHUNK 1
#else
#define HAS_CHUNK 0
#endif

#if MODE != FFMA
// fp32 -> tf32, round to nearest, ties away (cvt.rna), low 13 bits cleared.
inline uint tf32(float x) {
#if EMULATE
  return (as_uint(x) + 0x1000u) & TFMASK;
#else
  uint r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r & TFMASK;
#endif
}

// d (16x8 f32 fragment) += A (16x8 tf32, row) * B (8x8 tf32, col), one warp.
#if EMULATE
// Each lane publishes its fragments; each lane then computes its 4 outputs from the PTX
// ISA's layouts (g = lane >> 2, t = lane & 3): a0 A[g][t], a1 A[g+8][t], a2 A[g][t+4],
// a3 A[g+8][t+4]; b0 B[t][g], b1 B[t+4][g]; c0 C[g][2t], c1 C[g][2t+1], c2 C[g+8][2t],
// c3 C[g+8][2t+1].
inline void mma(float *d, const uint *a, const uint *b, __local float *w, int lane) {
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = 0; i < 4; ++i) w[lane * 6 + i] = as_float(a[i] & TFMASK);
  w[lane * 6 + 4] = as_float(b[0] & TFMASK);
  w[lane * 6 + 5] = as_float(b[1] & TFMASK);
  barrier(CLK_LOCAL_MEM_FENCE);
  const int g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r >> 1), col = 2 * t + (r & 1);
    float s = d[r];
    for (int k = 0; k < 8; ++k) {
      const float av = w[((row & 7) * 4 + (k & 3)) * 6 + (row >> 3) + 2 * (k >> 2)];
      const float bv = w[(col * 4 + (k & 3)) * 6 + 4 + (k >> 2)];
      s = fma(av, bv, s);
    }
    d[r] = s;
  }
}
#define MMA(d, a, b) mma(d, a, b, scratch + warp * 32 * 6, lane)
#else
inline void mma(float *d, const uint *a, const uint *b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#define MMA(d, a, b) mma(d, a, b)
#endif
#endif /* MODE != FFMA */

#define ZERO(x) UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int r = 0; r < 4; ++r) x[i][j][r] = 0.0f
#define ADD(x, y) UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int r = 0; r < 4; ++r) x[i][j][r] += y[i][j][r]

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gemm(__global const float *restrict a, __global const float *restrict b, __global float *restrict c) {
  __local float a_s[BM * LDA] __attribute__((aligned(16)));
  __local float b_s[KT * LDB] __attribute__((aligned(16)));
#if EMULATE
  __local float scratch[8 * 32 * 6];
#endif
  const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // 2 x 4 warps
  float acc[MI][NI][4];
  ZERO(acc);
#if HAS_SMALL
  float acc_small[MI][NI][4];
  ZERO(acc_small);
#endif
#if HAS_CHUNK
  float acc_chunk[MI][NI][4];
  ZERO(acc_chunk);
#endif
  float4 ra[NLD], rb[NLD];
#define LOAD(k0)                                                                                   \
  UNROLL for (int i = 0; i < NLD; ++i) {                                                           \
    const int f = i * 256 + tid;                                                                   \
    ra[i] = vload4(0, a + (size_t)(m0 + f / (KT / 4)) * K + (k0) + f % (KT / 4) * 4);              \
    rb[i] = vload4(0, b + (size_t)((k0) + f / (BN / 4)) * N + n0 + f % (BN / 4) * 4);              \
  }
  LOAD(0);
  for (int k0 = 0; k0 < K; k0 += KT) {
    barrier(CLK_LOCAL_MEM_FENCE);
    UNROLL for (int i = 0; i < NLD; ++i) {
      const int f = i * 256 + tid;
      vstore4(ra[i], 0, a_s + f / (KT / 4) * LDA + f % (KT / 4) * 4);
      vstore4(rb[i], 0, b_s + f / (BN / 4) * LDB + f % (BN / 4) * 4);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + KT < K) {
      LOAD(k0 + KT);
    }
    UNROLL for (int kk = 0; kk < KT; kk += 8) {
#if MODE == FFMA
      UNROLL for (int k = kk; k < kk + 8; ++k) {
        float av[MI][2], bv[NI][2];
        UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int h = 0; h < 2; ++h)
          av[i][h] = a_s[(wm + i * 16 + g + 8 * h) * LDA + k];
        UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int h = 0; h < 2; ++h)
          bv[j][h] = b_s[k * LDB + wn + j * 8 + 2 * t + h];
        UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int r = 0; r < 4; ++r)
          acc[i][j][r] = fma(av[i][r >> 1], bv[j][r & 1], acc[i][j][r]);
      }
#else
      float af[MI][4], bf[NI][2];
      UNROLL for (int i = 0; i < MI; ++i) {
        const int row = wm + i * 16 + g;
        af[i][0] = a_s[row * LDA + kk + t];
        af[i][1] = a_s[(row + 8) * LDA + kk + t];
        af[i][2] = a_s[row * LDA + kk + t + 4];
        af[i][3] = a_s[(row + 8) * LDA + kk + t + 4];
      }
      UNROLL for (int j = 0; j < NI; ++j) {
        const int col = wn + j * 8 + g;
        bf[j][0] = b_s[(kk + t) * LDB + col];
        bf[j][1] = b_s[(kk + t + 4) * LDB + col];
      }
      uint ahi[MI][4], bhi[NI][2];
      UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int r = 0; r < 4; ++r) ahi[i][r] = tf32(af[i][r]);
      UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int r = 0; r < 2; ++r) bhi[j][r] = tf32(bf[j][r]);
#if MODE == TF32
      UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int j = 0; j < NI; ++j) MMA(acc[i][j], ahi[i], bhi[j]);
#else
      uint alo[MI][4], blo[NI][2];
      UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int r = 0; r < 4; ++r)
        alo[i][r] = tf32(af[i][r] - as_float(ahi[i][r]));
      UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int r = 0; r < 2; ++r)
        blo[j][r] = tf32(bf[j][r] - as_float(bhi[j][r]));
#if MODE == X3
#define SMALL acc
#define BIG acc
#elif MODE == X3SPLIT
#define SMALL acc_small
#define BIG acc
#elif MODE == X3KSPLIT
#define SMALL acc_small
#define BIG acc_chunk
#else /* X3K */
#define SMALL acc_chunk
#define BIG acc_chunk
#endif
      UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int j = 0; j < NI; ++j) {
        MMA(SMALL[i][j], alo[i], bhi[j]);
        MMA(SMALL[i][j], ahi[i], blo[j]);
        MMA(BIG[i][j], ahi[i], bhi[j]);
      }
#if HAS_CHUNK
      if ((k0 + kk + 8) % KCHUNK == 0) {
        ADD(acc, acc_chunk);
        ZERO(acc_chunk);
      }
#endif
#endif /* TF32 */
#endif /* FFMA */
    }
  }
#if HAS_CHUNK
  if (K % KCHUNK) {
    ADD(acc, acc_chunk);
  }
#endif
#if HAS_SMALL
  ADD(acc, acc_small);
#endif
  // c0 C[g][2t], c1 C[g][2t+1], c2 C[g+8][2t], c3 C[g+8][2t+1]
  UNROLL for (int i = 0; i < MI; ++i) UNROLL for (int j = 0; j < NI; ++j) UNROLL for (int h = 0; h < 2; ++h)
    vstore2((float2)(acc[i][j][2 * h], acc[i][j][2 * h + 1]), 0,
            c + (size_t)(m0 + wm + i * 16 + g + 8 * h) * N + n0 + wn + j * 8 + 2 * t);
}
