// Conv2d -> HardSwish (x * relu6(x + 3) / 6) -> ReLU, fused into the convolution.

// Conv2d with HardSwish and ReLU: direct convolution, one thread per output element (n, co, oh, ow) over a flat
// index; the sum runs over the input channels of co's group and the kernel window, skipping taps
// that fall in the zero padding.
extern "C" __global__ void conv2d_hardswish_relu(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
        float* __restrict__ out, int N, int Cin, int H, int W, int Cout, int Ho, int Wo, int KH, int KW,
        int sh, int sw, int ph, int pw, int dh, int dw, int groups) {
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
        float hs = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
        out[i] = fmaxf(hs, 0.0f);
    }
}
