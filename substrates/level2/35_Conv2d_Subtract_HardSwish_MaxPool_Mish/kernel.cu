// Conv2d -> x - subtract_value -> HardSwish (one thread per conv output, fused epilogue),
// then MaxPool2d -> Mish (one thread per pooled output).

extern "C" __global__ void conv2d_sub_hardswish(const float* __restrict__ x, const float* __restrict__ w,
                                                const float* __restrict__ b, float* __restrict__ y, int N,
                                                int Cin, int H, int W, int Cout, int OH, int OW, int KH,
                                                int KW, int sh, int sw, int ph, int pw, int dh, int dw,
                                                int groups, float subtract_value, long long total) {
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
        v = v - subtract_value;
        // hardswish: x * min(max(x + 3, 0), 6) / 6
        float r6 = fminf(fmaxf(v + 3.0f, 0.0f), 6.0f);
        y[i] = v * r6 / 6.0f;
    }
}

extern "C" __global__ void maxpool2d_mish(const float* __restrict__ y, float* __restrict__ out, int H, int W,
                                          int PH, int PW, int KH, int KW, int sh, int sw, int ph, int pw,
                                          int dh, int dw, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int pw_i = (int)(i % PW);
        int ph_i = (int)((i / PW) % PH);
        long long nc = i / ((long long)PW * PH);
        const float* yp = y + nc * H * W;
        float m = -INFINITY;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = ph_i * sh - ph + kh * dh;
            if (ih >= 0 && ih < H) {
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = pw_i * sw - pw + kw * dw;
                    if (iw >= 0 && iw < W) {
                        float v = yp[(long long)ih * W + iw];
                        if (v > m || isnan(v)) m = v;
                    }
                }
            }
        }
        // mish: x * tanh(softplus(x)), softplus threshold 20
        float sp = m > 20.0f ? m : log1pf(expf(m));
        out[i] = m * tanhf(sp);
    }
}
