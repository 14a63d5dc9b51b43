/* Shared definitions for every leelaz kernel: storage type, load/store helpers.
 *
 * No kernels here. The loader (leelaz/backends/cl_program.py) puts generated #defines in
 * front of this file: STORAGE_HALF (0 or 1), M_FLOAT (1: the Winograd products M are kept in
 * float, as the tensor-core sgemm writes them), TENSOR_CORES, BOARD_SIZE, NUM_INTERSECTIONS,
 * WTILES, TILES, HEAD_OUTPUTS and the sgemm tile sizes. Arithmetic is always float; STORAGE_HALF only changes how tensors
 * are kept in global memory (vload_half/vstore_half are core OpenCL, so half storage works
 * on devices without cl_khr_fp16, PoCL included).
 */

#if STORAGE_HALF
typedef half store_t;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half((v), (i), (p))
#define LOAD4(p, i) vload_half4(0, (p) + (i))
#define STORE4(p, v) vstore_half4((v), 0, (p))
#define STORE2(p, v) vstore_half2((v), 0, (p))
#else
typedef float store_t;
#define LOAD(p, i) ((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = (v))
#define LOAD4(p, i) vload4(0, (p) + (i))
#define STORE4(p, v) vstore4((v), 0, (p))
#define STORE2(p, v) vstore2((v), 0, (p))
#endif

#if M_FLOAT
typedef float mstore_t;
#define LOADM(p, i) ((p)[(i)])
#else
typedef store_t mstore_t;
#define LOADM(p, i) LOAD(p, i)
#endif

/* Winograd F(4x4, 3x3) constants (src/kernels/convolve3.opencl), s = sqrt(2). */
#define SQ2 1.41421356237309515f
#define SQ2_2 0.707106781186547573f
#define SQ2_4 0.353553390593273786f
