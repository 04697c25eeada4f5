// level2/5: ConvTranspose2d -> - bias (C_out, 1, 1) -> tanh.

// ConvTranspose2d (NCHW) as a gather: one thread per OUTPUT element sums every input position
// that maps onto it (oh = ih * stride - pad + kh * dil).
// weight: (C_in, C_out / groups, KH, KW); bias: (C_out).
extern "C" __global__ void conv_transpose2d_forward(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        float* __restrict__ y, int N, int C_in, int H, int W, int C_out, int OH, int OW, int KH, int KW,
        int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups) {
    long long total = (long long)N * C_out * OH * OW;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int co = (int)((i / ((long long)OW * OH)) % C_out);
        int n = (int)(i / ((long long)OW * OH * C_out));
        int cin_g = C_in / groups;
        int cout_g = C_out / groups;
        int g = co / cout_g;
        int col = co - g * cout_g;
        long long HW = (long long)H * W;
        const float* xn = x + ((long long)n * C_in + (long long)g * cin_g) * HW;
        const float* wg = w + ((long long)g * cin_g * cout_g + col) * KH * KW;
        long long w_ci_stride = (long long)cout_g * KH * KW;
        float acc = 0.0f;
        for (int kh = 0; kh < KH; kh++) {
            int th = oh + pad_h - kh * dil_h;
            if (th < 0 || th % stride_h != 0) continue;
            int ih = th / stride_h;
            if (ih >= H) continue;
            for (int kw = 0; kw < KW; kw++) {
                int tw = ow + pad_w - kw * dil_w;
                if (tw < 0 || tw % stride_w != 0) continue;
                int iw = tw / stride_w;
                if (iw >= W) continue;
                long long x_off = (long long)ih * W + iw;
                long long w_off = (long long)kh * KW + kw;
                for (int ci = 0; ci < cin_g; ci++) {
                    acc += xn[x_off] * wg[w_off];
                    x_off += HW;
                    w_off += w_ci_stride;
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// Subtract the per-channel bias, then tanh.
extern "C" __global__ void bias_sub_tanh(const float* __restrict__ y, const float* __restrict__ bias,
                                         float* __restrict__ out, long long n, int C, long long HW) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = (int)((i / HW) % C);
        out[i] = tanhf(y[i] - bias[c]);
    }
}
