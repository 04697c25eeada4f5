// ConvTranspose3d -> MaxPool3d -> softmax over channels -> - subtract[c] -> swish -> max over channels.

// ConvTranspose3d as a gather: one thread per OUTPUT element (n, co, od, oh, ow) over a
// flat index. Input (id, ih, iw) feeds output od = id * sd - pd + kd * dd (same for h, w), so
// each tap (kd, kh, kw) contributes only when od + pd - kd * dd is a non-negative multiple of sd
// whose quotient is inside the input. Weight layout (Cin, Cout / groups, KD, KH, KW).
extern "C" __global__ void conv_transpose3d_fwd(const float* __restrict__ x, const float* __restrict__ w,
                                                const float* __restrict__ bias, float* __restrict__ out,
                                                int N, int Cin, int D, int H, int W, int Cout, int Do,
                                                int Ho, int Wo, int KD, int KH, int KW, int sd, int sh,
                                                int sw, int pd, int ph, int pw, int dd, int dh, int dw,
                                                int groups) {
    long long total = (long long)N * Cout * Do * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int od = (int)((i / ((long long)Wo * Ho)) % Do);
        int co = (int)((i / ((long long)Wo * Ho * Do)) % Cout);
        int n = (int)(i / ((long long)Wo * Ho * Do * Cout));
        int cin_g = Cin / groups;
        int cout_g = Cout / groups;
        int g = co / cout_g;
        int cl = co - g * cout_g;  // co's index inside its group
        long long xstride = (long long)D * H * W;               // between input channels of x
        long long wstride = (long long)cout_g * KD * KH * KW;   // between input channels of w
        float acc = 0.0f;
        for (int kd = 0; kd < KD; ++kd) {
            int td = od + pd - kd * dd;
            if (td < 0 || td % sd != 0) continue;
            int id = td / sd;
            if (id >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                int th = oh + ph - kh * dh;
                if (th < 0 || th % sh != 0) continue;
                int ih = th / sh;
                if (ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    int tw = ow + pw - kw * dw;
                    if (tw < 0 || tw % sw != 0) continue;
                    int iw = tw / sw;
                    if (iw >= W) continue;
                    const float* xp = x + ((long long)n * Cin + g * cin_g) * xstride + ((long long)id * H + ih) * W + iw;
                    const float* wp = w + ((long long)g * cin_g * cout_g + cl) * KD * KH * KW + (kd * KH + kh) * KW + kw;
                    for (int ci = 0; ci < cin_g; ++ci) {
                        acc += xp[ci * xstride] * wp[ci * wstride];
                    }
                }
            }
        }
        float v = acc + bias[co];
        out[i] = v;
    }
}

// MaxPool3d over each (n, c) volume, one thread per output element; taps in the padding are
// skipped (PyTorch pads max pooling with -inf). Floor mode.
extern "C" __global__ void max_pool3d(const float* __restrict__ x, float* __restrict__ out, int NC, int D,
                                      int H, int W, int Do, int Ho, int Wo, int KD, int KH, int KW, int sd,
                                      int sh, int sw, int pd, int ph, int pw, int dd, int dh, int dw) {
    long long total = (long long)NC * Do * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int od = (int)((i / ((long long)Wo * Ho)) % Do);
        long long nc = i / ((long long)Wo * Ho * Do);
        const float* xp = x + nc * D * H * W;
        float m = -INFINITY;
        for (int kd = 0; kd < KD; ++kd) {
            int id = od * sd - pd + kd * dd;
            if (id < 0 || id >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                int ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * sw - pw + kw * dw;
                    if (iw < 0 || iw >= W) continue;
                    m = fmaxf(m, xp[((long long)id * H + ih) * W + iw]);
                }
            }
        }
        out[i] = m;
    }
}

// Per (n, voxel), one thread: softmax over the C channels (max-subtracted), then
// max over c of swish(p - subtract[c]).
extern "C" __global__ void channel_softmax_sub_swish_max(
        const float* __restrict__ x, const float* __restrict__ sub, float* __restrict__ out, int N, int C,
        long long S) {
    long long total = (long long)N * S;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long s = i % S;
        int n = (int)(i / S);
        const float* xp = x + (long long)n * C * S + s;
        float m = -INFINITY;
        for (int c = 0; c < C; ++c) {
            m = fmaxf(m, xp[c * S]);
        }
        float acc = 0.0f;
        for (int c = 0; c < C; ++c) {
            acc += expf(xp[c * S] - m);
        }
        float r = -INFINITY;
        for (int c = 0; c < C; ++c) {
            float t = expf(xp[c * S] - m) / acc - sub[c];
            t = (1.0f / (1.0f + expf(-t))) * t;
            r = fmaxf(r, t);
        }
        out[i] = r;
    }
}
