// level2/7: Conv3d -> ReLU -> LeakyReLU(0.01) -> GELU -> Sigmoid -> + bias (C_out, 1, 1, 1).

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

// The activation chain, then the per-channel bias.
extern "C" __global__ void activations_bias(const float* __restrict__ y, const float* __restrict__ bias,
                                            float* __restrict__ out, long long n, int C, long long S) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = (int)((i / S) % C);
        float v = fmaxf(y[i], 0.0f);
        v = v > 0.0f ? v : v * 0.01f;
        v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
        v = 1.0f / (1.0f + expf(-v));
        out[i] = v + bias[c];
    }
}
