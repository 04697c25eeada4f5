// ConvTranspose2d -> + add_value -> min(x, 0) -> exact GELU -> * multiply_value, fused into the convolution.

// ConvTranspose2d with add, min, GELU and multiply as a gather: one thread per OUTPUT element (n, co, oh, ow) over a flat
// index. Input (ih, iw) feeds output oh = ih * sh - ph + kh * dh (same for w), so each tap
// (kh, kw) contributes only when oh + ph - kh * dh is a non-negative multiple of sh whose
// quotient is inside the input. Weight layout (Cin, Cout / groups, KH, KW).
extern "C" __global__ void conv_transpose2d_add_min_gelu_mul(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
        float* __restrict__ out, int N, int Cin, int H, int W, int Cout, int Ho, int Wo, int KH, int KW,
        int sh, int sw, int ph, int pw, int dh, int dw, int groups, float add_value, float multiply_value) {
    long long total = (long long)N * Cout * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int co = (int)((i / ((long long)Wo * Ho)) % Cout);
        int n = (int)(i / ((long long)Wo * Ho * Cout));
        int cin_g = Cin / groups;
        int cout_g = Cout / groups;
        int g = co / cout_g;
        int cl = co - g * cout_g;  // co's index inside its group
        long long xstride = (long long)H * W;              // between input channels of x
        long long wstride = (long long)cout_g * KH * KW;   // between input channels of w
        float acc = 0.0f;
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
                const float* xp = x + ((long long)n * Cin + g * cin_g) * xstride + (long long)ih * W + iw;
                const float* wp = w + ((long long)g * cin_g * cout_g + cl) * KH * KW + kh * KW + kw;
                for (int ci = 0; ci < cin_g; ++ci) {
                    acc += xp[ci * xstride] * wp[ci * wstride];
                }
            }
        }
        float v = acc + bias[co];
        v = v + add_value;
        v = fminf(v, 0.0f);
        v = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        out[i] = v * multiply_value;
    }
}
