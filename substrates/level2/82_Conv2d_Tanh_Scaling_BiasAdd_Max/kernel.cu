// Conv2d -> tanh -> * scaling_factor -> + bias[c] -> MaxPool2d.

// Conv2d with tanh, scaling and the model's bias: direct convolution, one thread per output element (n, co, oh, ow) over a flat
// index; the sum runs over the input channels of co's group and the kernel window, skipping taps
// that fall in the zero padding.
extern "C" __global__ void conv2d_tanh_scale_bias(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
        const float* __restrict__ add_bias, float* __restrict__ out, int N, int Cin, int H, int W, int Cout,
        int Ho, int Wo, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw, int groups,
        float scaling_factor) {
    long long total = (long long)N * Cout * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int co = (int)((i / ((long long)Wo * Ho)) % Cout);
        int n = (int)(i / ((long long)Wo * Ho * Cout));
        int cin_g = Cin / groups;
        int g = co / (Cout / groups);
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ++ci) {
            const float* xc = x + ((long long)n * Cin + g * cin_g + ci) * H * W;
            const float* wc = w + ((long long)co * cin_g + ci) * KH * KW;
            for (int kh = 0; kh < KH; ++kh) {
                int ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * sw - pw + kw * dw;
                    if (iw < 0 || iw >= W) continue;
                    acc += xc[(long long)ih * W + iw] * wc[kh * KW + kw];
                }
            }
        }
        float v = acc + bias[co];
        out[i] = tanhf(v) * scaling_factor + add_bias[co];
    }
}

// MaxPool2d over each (n, c) plane, one thread per output element; taps in the padding are
// skipped (PyTorch pads max pooling with -inf). Floor mode.
extern "C" __global__ void max_pool2d(const float* __restrict__ x, float* __restrict__ out, int NC, int H,
                                      int W, int Ho, int Wo, int KH, int KW, int sh, int sw, int ph, int pw,
                                      int dh, int dw) {
    long long total = (long long)NC * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        long long nc = i / ((long long)Wo * Ho);
        const float* xp = x + nc * H * W;
        float m = -INFINITY;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * sh - ph + kh * dh;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * sw - pw + kw * dw;
                if (iw < 0 || iw >= W) continue;
                m = fmaxf(m, xp[(long long)ih * W + iw]);
            }
        }
        out[i] = m;
    }
}
