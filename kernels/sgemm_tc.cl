/* Tensor-core variant of the batched Winograd product, for NVIDIA devices with half storage.
 *
 *   M[q][k][p] = sum_c U[q][c][k] * V[q][c][p]   (U, V half; M float; fp32 accumulation)
 *
 * Each warp computes a TC_WM x TC_WN block of M with PTX wmma m16n16k16 instructions, loading
 * its fragments straight from global memory (the L1 cache serves the reuse between the warps
 * of a work-group). As matrices: A[k][c] = U[c][k] is column-major with leading dimension
 * Kpad, B[c][p] = V[c][p] is row-major with leading dimension Ppad, M row-major (Ppad).
 * Built only when TENSOR_CORES is 1 (the tuner offers it on NVIDIA devices for half storage,
 * and keeps it only if its NumPy check passes). Our own code; it uses only documented PTX.
 *
 * Defines: TC_WM, TC_WN (multiples of 16), TC_WARPS_M, TC_WARPS_N, TC_SS (the state space
 * of the fragment loads and stores: ".global", or "" for generic addresses), TC_PREFETCH. Local size
 * (32, TC_WARPS_M * TC_WARPS_N, 1); global size (32 * Ppad / NWG, local_y * Kpad / MWG, 36)
 * with MWG = TC_WM * TC_WARPS_M, NWG = TC_WN * TC_WARPS_N. Cpad % 16 == 0.
 */
#if TENSOR_CORES

#define TC_LOAD_A(r, ptr, ld)                                                                 \
    __asm__ __volatile__("wmma.load.a.sync.aligned.col.m16n16k16" TC_SS ".f16 "                         \
                 "{%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"                                       \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]),    \
                   "=r"(r[6]), "=r"(r[7])                                                     \
                 : "l"((ulong)(ptr)), "r"(ld))

#define TC_LOAD_B(r, ptr, ld)                                                                 \
    __asm__ __volatile__("wmma.load.b.sync.aligned.row.m16n16k16" TC_SS ".f16 "                         \
                 "{%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"                                       \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]),    \
                   "=r"(r[6]), "=r"(r[7])                                                     \
                 : "l"((ulong)(ptr)), "r"(ld))

#define TC_MMA(d, a, b)                                                                       \
    __asm__ __volatile__("wmma.mma.sync.aligned.col.row.m16n16k16.f32.f32 "                           \
                 "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11,%12,%13,%14,%15}, "               \
                 "{%16,%17,%18,%19,%20,%21,%22,%23}, {%24,%25,%26,%27,%28,%29,%30,%31};"      \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]),    \
                   "=f"(d[6]), "=f"(d[7])                                                     \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),          \
                   "r"(a[6]), "r"(a[7]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]),          \
                   "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]), "f"(d[0]), "f"(d[1]),          \
                   "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]), "f"(d[7]))

#define TC_STORE(ptr, d, ld)                                                                  \
    __asm__ __volatile__("wmma.store.d.sync.aligned.row.m16n16k16" TC_SS ".f32 "                        \
                 "[%0], {%1,%2,%3,%4,%5,%6,%7,%8}, %9;"                                       \
                 :                                                                            \
                 : "l"((ulong)(ptr)), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]),  \
                   "f"(d[5]), "f"(d[6]), "f"(d[7]), "r"(ld)                                   \
                 : "memory")

#define TC_FM (TC_WM / 16)
#define TC_FN (TC_WN / 16)

__kernel __attribute__((reqd_work_group_size(32, TC_WARPS_M * TC_WARPS_N, 1)))
void sgemm_tc(const int Kpad, const int Ppad, const int Cpad,
              __global const half* restrict U, __global const half* restrict V,
              __global float* restrict M)
{
    const int warp = get_local_id(1);
    const int wm = warp / TC_WARPS_N;
    const int wn = warp - wm * TC_WARPS_N;
    const int n0 = get_group_id(0) * (TC_WN * TC_WARPS_N) + wn * TC_WN;
    const int m0 = get_group_id(1) * (TC_WM * TC_WARPS_M) + wm * TC_WM;
    const int q = get_group_id(2);
    U += q * Cpad * Kpad;
    V += q * Cpad * Ppad;
    M += q * Kpad * Ppad;

    float acc[TC_FM][TC_FN][8];
    for (int i = 0; i < TC_FM; i++) {
        for (int j = 0; j < TC_FN; j++) {
            for (int e = 0; e < 8; e++) {
                acc[i][j][e] = 0.0f;
            }
        }
    }
#if TC_PREFETCH
    /* The next step's fragments are loaded before this step's products are issued, so the
     * loads' latency overlaps the tensor-core work (the asm statements keep their order). */
    uint a[TC_FM][8];
    uint b[TC_FN][8];
    uint na[TC_FM][8];
    uint nb[TC_FN][8];
#pragma unroll
    for (int i = 0; i < TC_FM; i++) {
        TC_LOAD_A(a[i], U + m0 + i * 16, Kpad);
    }
#pragma unroll
    for (int j = 0; j < TC_FN; j++) {
        TC_LOAD_B(b[j], V + n0 + j * 16, Ppad);
    }
    for (int c = 0; c < Cpad; c += 16) {
        const int cn = c + 16 < Cpad ? c + 16 : c;  /* the last step reloads itself */
#pragma unroll
        for (int i = 0; i < TC_FM; i++) {
            TC_LOAD_A(na[i], U + cn * Kpad + m0 + i * 16, Kpad);
        }
#pragma unroll
        for (int j = 0; j < TC_FN; j++) {
            TC_LOAD_B(nb[j], V + cn * Ppad + n0 + j * 16, Ppad);
        }
#pragma unroll
        for (int i = 0; i < TC_FM; i++) {
#pragma unroll
            for (int j = 0; j < TC_FN; j++) {
                TC_MMA(acc[i][j], a[i], b[j]);
            }
        }
#pragma unroll
        for (int i = 0; i < TC_FM; i++) {
            for (int e = 0; e < 8; e++) {
                a[i][e] = na[i][e];
            }
        }
#pragma unroll
        for (int j = 0; j < TC_FN; j++) {
            for (int e = 0; e < 8; e++) {
                b[j][e] = nb[j][e];
            }
        }
    }
#else
    for (int c = 0; c < Cpad; c += 16) {
        uint a[TC_FM][8];
        uint b[TC_FN][8];
#pragma unroll
        for (int i = 0; i < TC_FM; i++) {
            TC_LOAD_A(a[i], U + c * Kpad + m0 + i * 16, Kpad);
        }
#pragma unroll
        for (int j = 0; j < TC_FN; j++) {
            TC_LOAD_B(b[j], V + c * Ppad + n0 + j * 16, Ppad);
        }
#pragma unroll
        for (int i = 0; i < TC_FM; i++) {
#pragma unroll
            for (int j = 0; j < TC_FN; j++) {
                TC_MMA(acc[i][j], a[i], b[j]);
            }
        }
    }
#endif
#pragma unroll
    for (int i = 0; i < TC_FM; i++) {
#pragma unroll
        for (int j = 0; j < TC_FN; j++) {
            TC_STORE(M + (m0 + i * 16) * Ppad + n0 + j * 16, acc[i][j], Ppad);
        }
    }
}

#endif
