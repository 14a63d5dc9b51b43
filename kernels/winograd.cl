/* Winograd F(4x4, 3x3) input and output transforms (Leela Zero's src/kernels/convolve3.opencl).
 *
 * Layouts (P = batch * TILES tile columns, padded to Ppad; C, K padded to Cpad, Kpad):
 *   activations  store_t [B][C][NUM_INTERSECTIONS]   (NCHW, row-major board, idx = y*19 + x)
 *   V            store_t [36][Cpad][Ppad]            V[xi*6+nu][c][p] = (Bt d B)[xi][nu]
 *   M            mstore_t [36][Kpad][Ppad]           output of the sgemm (float if M_FLOAT)
 * Tile p = b * TILES + ty * WTILES + tx reads padded rows 4ty..4ty+5 (board rows 4ty-1..4ty+4).
 */

/* r = Bt d for one 6-vector. */
inline void bt6(const float d0, const float d1, const float d2, const float d3,
                const float d4, const float d5, float r[6])
{
    r[0] = d0 - 2.5f * d2 + d4;
    r[1] = -SQ2 * d1 - 2.0f * d2 + SQ2_2 * d3 + d4;
    r[2] = SQ2 * d1 - 2.0f * d2 - SQ2_2 * d3 + d4;
    r[3] = -SQ2_2 * d1 - 0.5f * d2 + SQ2 * d3 + d4;
    r[4] = SQ2_2 * d1 - 0.5f * d2 - SQ2 * d3 + d4;
    r[5] = d1 - 2.5f * d3 + d5;
}

/* r = At m for one 6-vector. */
inline void at6(const float m0, const float m1, const float m2, const float m3,
                const float m4, const float m5, float r[4])
{
    r[0] = m0 + m1 + m2 + m3 + m4;
    r[1] = SQ2_2 * (m1 - m2) + SQ2 * (m3 - m4);
    r[2] = 0.5f * (m1 + m2) + 2.0f * (m3 + m4);
    r[3] = SQ2_4 * (m1 - m2) + 2.0f * SQ2 * (m3 - m4) + m5;
}

/* V[.][c][p] = Bt d B for one 6x6 input window d. */
inline void transform_store_v(float d[6][6], __global store_t* restrict V, const int c,
                              const int Cpad, const int p, const int Ppad)
{
    float t[6][6];
    float r[6];
    for (int j = 0; j < 6; j++) {
        bt6(d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j], r);
        for (int i = 0; i < 6; i++) {
            t[i][j] = r[i];
        }
    }
    const int plane_stride = Cpad * Ppad;
    for (int i = 0; i < 6; i++) {
        bt6(t[i][0], t[i][1], t[i][2], t[i][3], t[i][4], t[i][5], r);
        for (int j = 0; j < 6; j++) {
            STORE(V, (i * 6 + j) * plane_stride + c * Ppad + p, r[j]);
        }
    }
}

/* V = Bt d B for every (tile p, channel c) of the network input, which always arrives as
 * float32 planes (so the host never converts to half: NumPy's float16 conversion costs more
 * than the upload). The other layers' input transforms run inside out_in_transform.
 * Global size (>= Ppad, >= Cpad); any local size. */
__kernel void in_transform_input(__global const float* restrict in,
                                 __global store_t* restrict V,
                                 const int C, const int Cpad, const int P, const int Ppad)
{
    const int p = get_global_id(0);
    const int c = get_global_id(1);
    if (p >= Ppad || c >= Cpad) {
        return;
    }
    /* The 6x6 window of tile p: zero outside the board, and everywhere for padding rows
     * (c >= C) and columns (p >= P). */
    float d[6][6];
    const bool real = p < P && c < C;
    const int b = p / TILES;
    const int tile = p - b * TILES;
    const int ty = tile / WTILES;
    const int tx = tile - ty * WTILES;
    const int plane = (b * C + c) * NUM_INTERSECTIONS;
    for (int i = 0; i < 6; i++) {
        const int y = ty * 4 + i - 1;
        for (int j = 0; j < 6; j++) {
            const int x = tx * 4 + j - 1;
            const bool inside = real && y >= 0 && y < BOARD_SIZE && x >= 0 && x < BOARD_SIZE;
            d[i][j] = inside ? in[plane + y * BOARD_SIZE + x] : 0.0f;
        }
    }
    transform_store_v(d, V, c, Cpad, p, Ppad);
}

/* The first layer's input transform read straight from the positions (the network's 18 input
 * planes are built here, so the host uploads 3.5 kB a position instead of 26 kB of planes).
 * `boxes` holds, per position b, its last 8 mailboxes (21x21 bytes, newest first; a mailbox
 * before the game's start is all INVAL), then at `meta` one (side to move, symmetry) byte pair
 * per position. Plane c < 8 marks the side to move's stones c moves ago, 8 <= c < 16 the other
 * side's, 16 is all ones for Black to move, 17 for White; input point (x, y) reads the board at
 * its image under symmetry s (if s & 4 swap x and y; if s & 2 mirror x; if s & 1 mirror y), as
 * nn/features.py's input_planes_batch does. Rows past P (padding) are zero, like Cpad's.
 * HISTORY and MAILBOX_STRIDE are generated from the input layout (backends/base.py).
 * Dynamic komi: a position whose symmetry byte has the KOMI_FLAG bit set takes its colour
 * planes' values from `komis` instead: two little-endian floats per position at
 * komis + KOMI_BYTES b (the side to move's plane, then the other colour's); KOMI_FLAG and
 * KOMI_BYTES are generated too. */
#define MAILBOX (MAILBOX_STRIDE * MAILBOX_STRIDE)
__kernel void in_transform_boxes(__global const uchar* restrict boxes, const int meta,
                                 const int komis, __global store_t* restrict V,
                                 const int Cpad, const int P, const int Ppad)
{
    const int p = get_global_id(0);
    const int c = get_global_id(1);
    if (p >= Ppad || c >= Cpad) {
        return;
    }
    float d[6][6];
    const bool real = p < P && c < 2 * HISTORY + 2;
    const int b = p / TILES;
    const int tile = p - b * TILES;
    const int ty = tile / WTILES;
    const int tx = tile - ty * WTILES;
    const int side = real ? boxes[meta + 2 * b] : 0;
    const int flags = real ? boxes[meta + 2 * b + 1] : 0;
    const int s = flags & 7;
    const int own = c < HISTORY;
    const int box = (b * HISTORY + (own ? c : c - HISTORY)) * MAILBOX;
    const int colour = own ? side : 1 - side;
    float to_move = (c == 2 * HISTORY) == (side == 0) ? 1.0f : 0.0f;
    if ((flags & KOMI_FLAG) && c >= 2 * HISTORY) {
        const int at = komis + KOMI_BYTES * b + (c == 2 * HISTORY + side ? 0 : 4);
        to_move = as_float((uint)boxes[at] | ((uint)boxes[at + 1] << 8)
                           | ((uint)boxes[at + 2] << 16) | ((uint)boxes[at + 3] << 24));
    }
    for (int i = 0; i < 6; i++) {
        const int y = ty * 4 + i - 1;
        for (int j = 0; j < 6; j++) {
            const int x = tx * 4 + j - 1;
            const bool inside = real && y >= 0 && y < BOARD_SIZE && x >= 0 && x < BOARD_SIZE;
            float v = 0.0f;
            if (inside) {
                if (c >= 2 * HISTORY) {
                    v = to_move;
                } else {
                    int sx = (s & 4) ? y : x;
                    int sy = (s & 4) ? x : y;
                    sx = (s & 2) ? BOARD_SIZE - 1 - sx : sx;
                    sy = (s & 1) ? BOARD_SIZE - 1 - sy : sy;
                    v = boxes[box + (sy + 1) * MAILBOX_STRIDE + sx + 1] == colour ? 1.0f : 0.0f;
                }
            }
            d[i][j] = v;
        }
    }
    transform_store_v(d, V, c, Cpad, p, Ppad);
}

/* o = At m A for the 6x6 products of one tile: m[(i*6 + j) * plane_stride + at]. */
inline void at_tile(__global const mstore_t* restrict M, const int plane_stride, const int at,
                    float o[4][4])
{
    float t[4][6];
    float r[4];
    for (int j = 0; j < 6; j++) {
        float m[6];
        for (int i = 0; i < 6; i++) {
            m[i] = LOADM(M, (i * 6 + j) * plane_stride + at);
        }
        at6(m[0], m[1], m[2], m[3], m[4], m[5], r);
        for (int i = 0; i < 4; i++) {
            t[i][j] = r[i];
        }
    }
    for (int i = 0; i < 4; i++) {
        at6(t[i][0], t[i][1], t[i][2], t[i][3], t[i][4], t[i][5], o[i]);
    }
}

/* The batch-norm epilogue of tile `tile` in one channel plane (`base` = its first element):
 * o becomes [ReLU](s * (o - mu) [+ res]), stored into `out` where it lies on the board.
 * `res` may alias `out`. */
inline void bn_store_tile(float o[4][4], const int tile, const int base, const float mu,
                          const float s, __global store_t* out, __global const store_t* res,
                          const int has_res, const int relu)
{
    const int ty = tile / WTILES;
    const int tx = tile - ty * WTILES;
    for (int i = 0; i < 4; i++) {
        const int y = ty * 4 + i;
        if (y >= BOARD_SIZE) {
            break;
        }
        for (int j = 0; j < 4; j++) {
            const int x = tx * 4 + j;
            if (x < BOARD_SIZE) {
                const int at = y * BOARD_SIZE + x;
                float v = s * (o[i][j] - mu);
                if (has_res) {
                    v += LOAD(res, base + at);
                }
                if (relu) {
                    v = fmax(v, 0.0f);
                }
                STORE(out, base + at, v);
                o[i][j] = v;
            }
        }
    }
}

/* out = [ReLU](scale * (At M A - mean) [+ res]) for every (tile p < P, output channel k < K).
 * `res` may alias `out` (each element is read and written by the same work item).
 * Global size (>= P, >= K); any local size. Used for the last 3x3 layer of the tower. */
__kernel void out_transform_bn(__global const mstore_t* restrict M, __global store_t* out,
                               __global const store_t* res,
                               __global const float* restrict mean,
                               __global const float* restrict scale,
                               const int K, const int Kpad, const int P, const int Ppad,
                               const int has_res, const int relu)
{
    const int p = get_global_id(0);
    const int k = get_global_id(1);
    if (p >= P || k >= K) {
        return;
    }
    float o[4][4];
    at_tile(M, Kpad * Ppad, k * Ppad + p, o);
    const int b = p / TILES;
    bn_store_tile(o, p - b * TILES, (b * K + k) * NUM_INTERSECTIONS, mean[k], scale[k], out,
                  res, has_res, relu);
}

/* out_transform_bn (with ReLU) fused with the next layer's in_transform, which reads what it
 * writes: every other 3x3 layer's output is the next one's input, and both transforms work
 * channel by channel. One work group per (board, channel) keeps that channel's 19x19 plane in
 * local memory between the two, which saves a launch per layer and a re-read of `out`.
 *
 * Work group (board g, channel k), local size (>= TILES, 1):
 *   k < K:     out and V[.][k][g*TILES + t] for the board's tiles t;
 *   k >= K:    zero V rows for the next layer's channel padding (k < Cpad: NaN left there
 *              would survive a zero weight).
 * V's padding columns (p >= P) are left as they are: a column of M depends only on the same
 * column of V, and M's padding columns are never read.
 * Global size (P / TILES * local size, Cpad). */
__kernel void out_in_transform(__global const mstore_t* restrict M, __global store_t* out,
                               __global const store_t* res,
                               __global const float* restrict mean,
                               __global const float* restrict scale,
                               __global store_t* restrict V,
                               const int K, const int Kpad, const int P, const int Ppad,
                               const int Cpad, const int has_res)
{
    __local float plane[NUM_INTERSECTIONS];
    const int t = get_local_id(0);
    const int g = get_group_id(0);
    const int k = get_global_id(1);
    const int plane_stride = Cpad * Ppad;
    const int p = g * TILES + t;
    /* Uniform over the work group, so the barrier below is safe. */
    if (k >= K) {
        if (t < TILES) {
            for (int q = 0; q < 36; q++) {
                STORE(V, q * plane_stride + k * Ppad + p, 0.0f);
            }
        }
        return;
    }
    if (t < TILES) {
        float o[4][4];
        at_tile(M, Kpad * Ppad, k * Ppad + p, o);
        bn_store_tile(o, t, (g * K + k) * NUM_INTERSECTIONS, mean[k], scale[k], out, res,
                      has_res, 1);
        const int ty = t / WTILES;
        const int tx = t - ty * WTILES;
        for (int i = 0; i < 4 && ty * 4 + i < BOARD_SIZE; i++) {
            for (int j = 0; j < 4 && tx * 4 + j < BOARD_SIZE; j++) {
                plane[(ty * 4 + i) * BOARD_SIZE + tx * 4 + j] = o[i][j];
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < TILES) {
        const int ty = t / WTILES;
        const int tx = t - ty * WTILES;
        float d[6][6];
        for (int i = 0; i < 6; i++) {
            const int y = ty * 4 + i - 1;
            for (int j = 0; j < 6; j++) {
                const int x = tx * 4 + j - 1;
                const bool inside = y >= 0 && y < BOARD_SIZE && x >= 0 && x < BOARD_SIZE;
                d[i][j] = inside ? plane[y * BOARD_SIZE + x] : 0.0f;
            }
        }
        transform_store_v(d, V, k, Cpad, p, Ppad);
    }
}
