// level2/1: Conv2d -> ReLU -> + bias (C_out, 1, 1).

// Conv2d (NCHW), one thread per output element: gather over the receptive field.
// weight: (C_out, C_in / groups, KH, KW); bias: (C_out).
extern "C" __global__ void conv2d_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int N,
                                          int C_in, int H, int W, int C_out, int OH, int OW, int KH, int KW,
                                          int stride_h, int stride_w, int pad_h, int pad_w, int dil_h,
                                          int dil_w, int groups) {
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
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ci++) {
            const float* xc = x + ((long long)n * C_in + g * cin_g + ci) * H * W;
            const float* wc = w + ((long long)co * cin_g + ci) * KH * KW;
            for (int kh = 0; kh < KH; kh++) {
                int ih = oh * stride_h - pad_h + kh * dil_h;
                if (ih >= 0 && ih < H) {
                    for (int kw = 0; kw < KW; kw++) {
                        int iw = ow * stride_w - pad_w + kw * dil_w;
                        if (iw >= 0 && iw < W) {
                            acc += xc[(long long)ih * W + iw] * wc[kh * KW + kw];
                        }
                    }
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// ReLU, then add the per-channel bias.
extern "C" __global__ void relu_bias_add(const float* __restrict__ y, const float* __restrict__ bias,
                                         float* __restrict__ out, long long n, int C, long long HW) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = (int)((i / HW) % C);
        float v = fmaxf(y[i], 0.0f);
        out[i] = v + bias[c];
    }
}
