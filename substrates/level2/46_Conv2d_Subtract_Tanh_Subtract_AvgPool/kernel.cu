// Conv2d with the fused epilogue tanh(x - subtract1) - subtract2 (one thread per conv output),
// then AvgPool2d (one thread per pooled output).

extern "C" __global__ void conv2d_sub_tanh_sub(const float* __restrict__ x, const float* __restrict__ w,
                                               const float* __restrict__ b, float* __restrict__ y, int N,
                                               int Cin, int H, int W, int Cout, int OH, int OW, int KH,
                                               int KW, int sh, int sw, int ph, int pw, int dh, int dw,
                                               int groups, float subtract1, float subtract2,
                                               long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int co = (int)((i / ((long long)OW * OH)) % Cout);
        int n = (int)(i / ((long long)OW * OH * Cout));
        int cin_g = Cin / groups;
        int g = co / (Cout / groups);
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ++ci) {
            const float* xp = x + ((long long)n * Cin + (long long)g * cin_g + ci) * H * W;
            const float* wp = w + ((long long)co * cin_g + ci) * KH * KW;
            for (int kh = 0; kh < KH; ++kh) {
                int ih = oh * sh - ph + kh * dh;
                if (ih >= 0 && ih < H) {
                    for (int kw = 0; kw < KW; ++kw) {
                        int iw = ow * sw - pw + kw * dw;
                        if (iw >= 0 && iw < W) {
                            acc += xp[(long long)ih * W + iw] * wp[kh * KW + kw];
                        }
                    }
                }
            }
        }
        float v = acc + b[co];
        v = tanhf(v - subtract1);
        y[i] = v - subtract2;
    }
}

// AvgPool2d with count_include_pad: the divisor counts padded positions inside the padded map
extern "C" __global__ void avg_pool2d(const float* __restrict__ y, float* __restrict__ out, int H, int W,
                                      int PH, int PW, int KH, int KW, int sh, int sw, int ph, int pw,
                                      long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % PW);
        int oh = (int)((i / PW) % PH);
        long long nc = i / ((long long)PW * PH);
        int h0 = oh * sh - ph;
        int w0 = ow * sw - pw;
        int h1 = min(h0 + KH, H + ph);
        int w1 = min(w0 + KW, W + pw);
        int count = (h1 - h0) * (w1 - w0);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        h1 = min(h1, H);
        w1 = min(w1, W);
        const float* p = y + nc * H * W;
        float acc = 0.0f;
        for (int h = h0; h < h1; ++h) {
            for (int w = w0; w < w1; ++w) {
                acc += p[(long long)h * W + w];
            }
        }
        out[i] = acc / (float)count;
    }
}
