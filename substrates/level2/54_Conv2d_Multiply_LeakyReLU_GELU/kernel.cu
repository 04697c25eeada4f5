// Conv2d (one thread per output) with the fused epilogue GELU(LeakyReLU(x * multiplier[c])).

extern "C" __global__ void conv2d_mul_leaky_gelu(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        const float* __restrict__ multiplier, float* __restrict__ y, int N, int Cin, int H, int W, int Cout,
        int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw, int groups,
        float negative_slope, long long total) {
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
        v = v * multiplier[co];
        v = v > 0.0f ? v : v * negative_slope;
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
