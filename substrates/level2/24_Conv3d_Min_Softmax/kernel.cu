// level2/24: Conv3d -> min over depth -> softmax over channels.

// Conv3d (NCDHW), one thread per output element: gather over the receptive field.
// weight: (C_out, C_in / groups, KD, KH, KW); bias: (C_out).
extern "C" __global__ void conv3d_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int N,
                                          int C_in, int D, int H, int W, int C_out, int OD, int OH, int OW,
                                          int KD, int KH, int KW, int stride_d, int stride_h, int stride_w,
                                          int pad_d, int pad_h, int pad_w, int dil_d, int dil_h, int dil_w,
                                          int groups) {
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
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ci++) {
            const float* xc = x + ((long long)n * C_in + g * cin_g + ci) * D * H * W;
            const float* wc = w + ((long long)co * cin_g + ci) * KD * KH * KW;
            for (int kd = 0; kd < KD; kd++) {
                int id = od * stride_d - pad_d + kd * dil_d;
                if (id >= 0 && id < D) {
                    for (int kh = 0; kh < KH; kh++) {
                        int ih = oh * stride_h - pad_h + kh * dil_h;
                        if (ih >= 0 && ih < H) {
                            for (int kw = 0; kw < KW; kw++) {
                                int iw = ow * stride_w - pad_w + kw * dil_w;
                                if (iw >= 0 && iw < W) {
                                    acc += xc[((long long)id * H + ih) * W + iw] *
                                           wc[(kd * KH + kh) * KW + kw];
                                }
                            }
                        }
                    }
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// Min over the depth dim (dim 2): one thread per (n, c, h, w).
extern "C" __global__ void depth_min(const float* __restrict__ y, float* __restrict__ out, long long n,
                                     int D, long long HW) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long hw = i % HW;
        long long nc = i / HW;
        const float* p = y + nc * D * HW + hw;
        float m = INFINITY;
        for (int d = 0; d < D; d++) {
            m = fminf(m, p[d * HW]);
        }
        out[i] = m;
    }
}

// Softmax over the channel dim: one thread per (n, spatial position) walks the C channels.
extern "C" __global__ void softmax_channels(const float* __restrict__ y, float* __restrict__ out,
                                            long long NS, int C, long long S) {
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
            q[c * S] = expf(p[c * S] - m) / sum;
        }
    }
}
