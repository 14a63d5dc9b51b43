/* 1x1 convolution for the heads, fused with batch norm and ReLU.
 *
 *   in   store_t [B][C][NUM_INTERSECTIONS]     the tower's output
 *   w    float   [HEAD_OUTPUTS][C]             policy conv rows then the value conv row
 *   out  float   [B][HEAD_OUTPUTS][NUM_INTERSECTIONS]
 *   out = ReLU(scale * (w . in - mean)), per output channel.
 * Global size (>= NUM_INTERSECTIONS, B); any local size.
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

/* A fully connected layer on a batch: out[b][o] = [ReLU](bias[o] + sum_i W[o][i] in[b][i]).
 *   in   float at in + in_offset + b * in_stride, n_in values per position
 *   W    float [n_out][n_in] (row-major, as in the weights file), bias float [n_out]
 *   out  float at out + out_offset + b * out_stride
 * Used for the policy FC (722 -> 362) and the value FCs (361 -> 256 -> 1), so that only the
 * logits and the value come back to the host. Global size (>= n_out, >= B); any local size.
 */
__kernel void fc_layer(__global const float* restrict in, const int in_offset,
                       const int in_stride, __global const float* restrict W,
                       __global const float* restrict bias, __global float* restrict out,
                       const int out_offset, const int out_stride, const int n_in,
                       const int n_out, const int B, const int relu)
{
    const int o = get_global_id(0);
    const int b = get_global_id(1);
    if (o >= n_out || b >= B) {
        return;
    }
    __global const float* x = in + in_offset + b * in_stride;
    __global const float* w = W + o * n_in;
    float acc = 0.0f;
    for (int i = 0; i < n_in; i++) {
        acc = mad(w[i], x[i], acc);
    }
    acc += bias[o];
    out[out_offset + b * out_stride + o] = relu ? fmax(acc, 0.0f) : acc;
}
