// level2/20: ConvTranspose3d -> ((y + bias) + y) * y + y.

// ConvTranspose3d (NCDHW) as a gather: one thread per OUTPUT element sums every input position
// that maps onto it (od = id * stride - pad + kd * dil, likewise h and w).
// weight: (C_in, C_out / groups, KD, KH, KW); bias: (C_out).
extern "C" __global__ void conv_transpose3d_forward(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        float* __restrict__ y, int N, int C_in, int D, int H, int W, int C_out, int OD, int OH, int OW,
        int KD, int KH, int KW, int stride_d, int stride_h, int stride_w, int pad_d, int pad_h, int pad_w,
        int dil_d, int dil_h, int dil_w, int groups) {
    long long total = (long long)N * C_out * OD * OH * OW;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int od = (int)((i / ((long long)OW * OH)) % OD);
        int co = (int)((i / ((long long)OW * OH * OD)) % C_out);
        int n = (int)(i / ((long long)OW * OH * OD * C_out));
        int cin_g = C_in / groups;
        int cout_g = C_out / groups;
        int g = co / cout_g;
        int col = co - g * cout_g;
        long long DHW = (long long)D * H * W;
        const float* xn = x + ((long long)n * C_in + (long long)g * cin_g) * DHW;
        const float* wg = w + ((long long)g * cin_g * cout_g + col) * KD * KH * KW;
        long long w_ci_stride = (long long)cout_g * KD * KH * KW;
        float acc = 0.0f;
        for (int kd = 0; kd < KD; kd++) {
            int td = od + pad_d - kd * dil_d;
            if (td < 0 || td % stride_d != 0) continue;
            int id = td / stride_d;
            if (id >= D) continue;
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
                    long long x_off = ((long long)id * H + ih) * W + iw;
                    long long w_off = ((long long)kd * KH + kh) * KW + kw;
                    for (int ci = 0; ci < cin_g; ci++) {
                        acc += xn[x_off] * wg[w_off];
                        x_off += DHW;
                        w_off += w_ci_stride;
                    }
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// With y the transposed-conv output: ((y + bias[c]) + y) * y + y.
extern "C" __global__ void bias_residual(const float* __restrict__ y, const float* __restrict__ bias,
                                         float* __restrict__ out, long long n, int C, long long S) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = (int)((i / S) % C);
        float orig = y[i];
        float v = orig + bias[c];
        v = v + orig;
        v = v * orig;
        out[i] = v + orig;
    }
}
