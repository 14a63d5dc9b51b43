/* Batched tiled matrix multiply over the 36 Winograd positions (our own kernel).
 *
 *   M[q][k][p] = sum_c U[q][c][k] * V[q][c][p]     for q in 0..35
 *   U store_t [36][Cpad][Kpad], V store_t [36][Cpad][Ppad], M store_t [36][Kpad][Ppad]
 *
 * Both operands have the reduction index c as their slow index, so every tile row the kernel
 * copies to local memory is a contiguous, coalesced run. Accumulation is float.
 *
 * Tuned parameters (generated #defines, chosen by leelaz/backends/tuner.py):
 *   MWG, NWG  rows (k) and columns (p) of M computed by one work-group
 *   KWG       reduction step held in local memory
 *   MDIMC, NDIMC  work-group shape: local size is (NDIMC, MDIMC, 1)
 *   VWM, VWN  vector width (1, 2 or 4) of the local-memory reads and of the stores
 *   PREFETCH  1: stage the next tile's global loads in registers during the products
 * Preconditions (asserted by the loader): Kpad % MWG == 0, Ppad % NWG == 0, Cpad % KWG == 0,
 * MWG % (MDIMC * VWM) == 0, NWG % (NDIMC * VWN) == 0, MWG % 4 == 0, NWG % 4 == 0.
 * Global size (Ppad / NWG * NDIMC, Kpad / MWG * MDIMC, 36).
 */

#define MWI (MWG / MDIMC)
#define NWI (NWG / NDIMC)
#define NTHREADS (MDIMC * NDIMC)

#if VWM == 1
typedef float floatM;
#define UNPACK_M(a, o, v) a[(o)] = (v);
#elif VWM == 2
typedef float2 floatM;
#define UNPACK_M(a, o, v) a[(o)] = (v).x; a[(o) + 1] = (v).y;
#else
typedef float4 floatM;
#define UNPACK_M(a, o, v) a[(o)] = (v).x; a[(o) + 1] = (v).y; a[(o) + 2] = (v).z; a[(o) + 3] = (v).w;
#endif

#if VWN == 1
typedef float floatN;
#define UNPACK_N(a, o, v) a[(o)] = (v);
#elif VWN == 2
typedef float2 floatN;
#define UNPACK_N(a, o, v) a[(o)] = (v).x; a[(o) + 1] = (v).y;
#else
typedef float4 floatN;
#define UNPACK_N(a, o, v) a[(o)] = (v).x; a[(o) + 1] = (v).y; a[(o) + 2] = (v).z; a[(o) + 3] = (v).w;
#endif

__kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1)))
void sgemm_tn(const int Kpad, const int Ppad, const int Cpad,
              __global const store_t* restrict U, __global const store_t* restrict V,
              __global store_t* restrict M)
{
    __local float4 As4[KWG * MWG / 4];
    __local float4 Bs4[KWG * NWG / 4];
    __local float* As = (__local float*)As4;
    __local float* Bs = (__local float*)Bs4;

    const int tn = get_local_id(0);
    const int tm = get_local_id(1);
    const int tid = tm * NDIMC + tn;
    const int n0 = get_group_id(0) * NWG;
    const int m0 = get_group_id(1) * MWG;
    const int q = get_group_id(2);
    U += q * Cpad * Kpad;
    V += q * Cpad * Ppad;
    M += q * Kpad * Ppad;

    float acc[MWI * NWI];
    for (int i = 0; i < MWI * NWI; i++) {
        acc[i] = 0.0f;
    }

#if PREFETCH
    /* The next tile's global loads are issued before this tile's products, into registers,
     * so their latency overlaps the arithmetic. Needs KWG*MWG/4 and KWG*NWG/4 to be
     * multiples of NTHREADS (checked by the tuner). */
#define LA (KWG * MWG / 4 / NTHREADS)
#define LB (KWG * NWG / 4 / NTHREADS)
    float4 ra[LA];
    float4 rb[LB];
#pragma unroll
    for (int l = 0; l < LA; l++) {
        const int e = tid + l * NTHREADS;
        const int row = e / (MWG / 4);
        ra[l] = LOAD4(U, row * Kpad + m0 + (e - row * (MWG / 4)) * 4);
    }
#pragma unroll
    for (int l = 0; l < LB; l++) {
        const int e = tid + l * NTHREADS;
        const int row = e / (NWG / 4);
        rb[l] = LOAD4(V, row * Ppad + n0 + (e - row * (NWG / 4)) * 4);
    }
    for (int c0 = 0; c0 < Cpad; c0 += KWG) {
#pragma unroll
        for (int l = 0; l < LA; l++) {
            As4[tid + l * NTHREADS] = ra[l];
        }
#pragma unroll
        for (int l = 0; l < LB; l++) {
            Bs4[tid + l * NTHREADS] = rb[l];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (c0 + KWG < Cpad) {
#pragma unroll
            for (int l = 0; l < LA; l++) {
                const int e = tid + l * NTHREADS;
                const int row = e / (MWG / 4);
                ra[l] = LOAD4(U, (c0 + KWG + row) * Kpad + m0 + (e - row * (MWG / 4)) * 4);
            }
#pragma unroll
            for (int l = 0; l < LB; l++) {
                const int e = tid + l * NTHREADS;
                const int row = e / (NWG / 4);
                rb[l] = LOAD4(V, (c0 + KWG + row) * Ppad + n0 + (e - row * (NWG / 4)) * 4);
            }
        }
#else
    for (int c0 = 0; c0 < Cpad; c0 += KWG) {
        for (int e = tid; e < KWG * MWG / 4; e += NTHREADS) {
            const int row = e / (MWG / 4);
            const int col = (e - row * (MWG / 4)) * 4;
            As4[e] = LOAD4(U, (c0 + row) * Kpad + m0 + col);
        }
        for (int e = tid; e < KWG * NWG / 4; e += NTHREADS) {
            const int row = e / (NWG / 4);
            const int col = (e - row * (NWG / 4)) * 4;
            Bs4[e] = LOAD4(V, (c0 + row) * Ppad + n0 + col);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
#pragma unroll
        for (int kk = 0; kk < KWG; kk++) {
            float a[MWI];
            float b[NWI];
            __local const floatM* arow = (__local const floatM*)(As + kk * MWG);
            __local const floatN* brow = (__local const floatN*)(Bs + kk * NWG);
#pragma unroll
            for (int i = 0; i < MWI / VWM; i++) {
                const floatM v = arow[i * MDIMC + tm];
                UNPACK_M(a, i * VWM, v)
            }
#pragma unroll
            for (int j = 0; j < NWI / VWN; j++) {
                const floatN v = brow[j * NDIMC + tn];
                UNPACK_N(b, j * VWN, v)
            }
#pragma unroll
            for (int i = 0; i < MWI; i++) {
#pragma unroll
                for (int j = 0; j < NWI; j++) {
                    acc[i * NWI + j] = mad(a[i], b[j], acc[i * NWI + j]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#pragma unroll
    for (int i = 0; i < MWI; i++) {
        const int m = m0 + ((i / VWM) * MDIMC + tm) * VWM + (i % VWM);
#pragma unroll
        for (int j = 0; j < NWI / VWN; j++) {
            const int n = n0 + (j * NDIMC + tn) * VWN;
            __global store_t* dst = M + m * Ppad + n;
            const float* r = acc + i * NWI + j * VWN;
#if VWN == 4
            STORE4(dst, (float4)(r[0], r[1], r[2], r[3]));
#elif VWN == 2
            STORE2(dst, (float2)(r[0], r[1]));
#else
            STORE(dst, 0, r[0]);
#endif
        }
    }
}
