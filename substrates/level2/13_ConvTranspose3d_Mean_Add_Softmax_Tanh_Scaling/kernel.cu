// level2/13: ConvTranspose3d -> mean over depth -> + bias -> softmax over channels -> tanh -> * scale.

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

// Mean over the depth dim (keepdim) plus the per-channel bias: one thread per (n, c, h, w).
extern "C" __global__ void depth_mean_bias(const float* __restrict__ y, const float* __restrict__ bias,
                                           float* __restrict__ out, long long n, int C, int D,
                                           long long HW) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long hw = i % HW;
        long long nc = i / HW;
        int c = (int)(nc % C);
        const float* p = y + nc * D * HW + hw;
        float acc = 0.0f;
        for (int d = 0; d < D; d++) {
            acc += p[d * HW];
        }
        out[i] = acc / D + bias[c];
    }
}

// Softmax over the channel dim, then tanh and scaling: one thread per (n, spatial position).
extern "C" __global__ void softmax_tanh_scale(const float* __restrict__ y, float* __restrict__ out,
                                              long long NS, int C, long long S, float scaling_factor) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NS) {
        long long n = i / S;
        long long s = i % S;
        const float* p = y + n * C * S + s;
        float* q = out + n * C * S + s;
        float m = -INFINITY;
        for (int c = 0; c < C; c++) {
            m = fmaxf(m, p[c * S]);
        }
        float sum = 0.0f;
        for (int c = 0; c < C; c++) {
            sum += expf(p[c * S] - m);
        }
        for (int c = 0; c < C; c++) {
            q[c * S] = tanhf(expf(p[c * S] - m) / sum) * scaling_factor;
        }
    }
}
