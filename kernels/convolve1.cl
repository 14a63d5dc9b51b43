/* 1x1 convolution for the heads, fused with batch norm and ReLU.
 *
 *   in   store_t [B][C][NUM_INTERSECTIONS]     the tower's output
 *   w    float   [HEAD_OUTPUTS][C]             policy conv rows then the value conv row
 *   out  float   [B][HEAD_OUTPUTS][NUM_INTERSECTIONS]
 *   out = ReLU(scale * (w . in - mean)), per output channel.
 * Global size (>= NUM_INTERSECTIONS, B); any local size. The fully connected layers that
 * follow run on the host (leelaz/backends/opencl_backend.py says why).
 */
__kernel void head_conv1x1(__global const store_t* restrict in, __global const float* restrict w,
                           __global const float* restrict mean,
                           __global const float* restrict scale,
                           __global float* restrict out, const int C, const int B)
{
    const int idx = get_global_id(0);
    const int b = get_global_id(1);
    if (idx >= NUM_INTERSECTIONS || b >= B) {
        return;
    }
    float acc[HEAD_OUTPUTS];
    for (int o = 0; o < HEAD_OUTPUTS; o++) {
        acc[o] = 0.0f;
    }
    __global const store_t* x = in + b * C * NUM_INTERSECTIONS + idx;
    for (int c = 0; c < C; c++) {
        const float v = LOAD(x, c * NUM_INTERSECTIONS);
        for (int o = 0; o < HEAD_OUTPUTS; o++) {
            acc[o] = mad(w[o * C + c], v, acc[o]);
        }
    }
    for (int o = 0; o < HEAD_OUTPUTS; o++) {
        const float v = scale[o] * (acc[o] - mean[o]);
        out[(b * HEAD_OUTPUTS + o) * NUM_INTERSECTIONS + idx] = fmax(v, 0.0f);
    }
}
