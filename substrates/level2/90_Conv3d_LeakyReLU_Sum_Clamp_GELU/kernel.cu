// Conv3d -> LeakyReLU(0.2) -> + sum_tensor[c] -> clamp to [-1, 1] -> exact GELU, fused into the convolution.

// Conv3d with LeakyReLU, add, clamp and GELU: direct convolution, one thread per output element (n, co, od, oh, ow) over a
// flat index; the sum runs over the input channels of co's group and the kernel window,
// skipping taps that fall in the zero padding.
extern "C" __global__ void conv3d_leaky_sum_clamp_gelu(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
        const float* __restrict__ sum_t, float* __restrict__ out, int N, int Cin, int D, int H, int W,
        int Cout, int Do, int Ho, int Wo, int KD, int KH, int KW, int sd, int sh, int sw, int pd, int ph,
        int pw, int dd, int dh, int dw, int groups) {
    long long total = (long long)N * Cout * Do * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int od = (int)((i / ((long long)Wo * Ho)) % Do);
        int co = (int)((i / ((long long)Wo * Ho * Do)) % Cout);
        int n = (int)(i / ((long long)Wo * Ho * Do * Cout));
        int cin_g = Cin / groups;
        int g = co / (Cout / groups);
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ++ci) {
            const float* xc = x + ((long long)n * Cin + g * cin_g + ci) * D * H * W;
            const float* wc = w + ((long long)co * cin_g + ci) * KD * KH * KW;
            for (int kd = 0; kd < KD; ++kd) {
                int id = od * sd - pd + kd * dd;
                if (id < 0 || id >= D) continue;
                for (int kh = 0; kh < KH; ++kh) {
                    int ih = oh * sh - ph + kh * dh;
                    if (ih < 0 || ih >= H) continue;
                    for (int kw = 0; kw < KW; ++kw) {
                        int iw = ow * sw - pw + kw * dw;
                        if (iw < 0 || iw >= W) continue;
                        acc += xc[((long long)id * H + ih) * W + iw] * wc[(kd * KH + kh) * KW + kw];
                    }
                }
            }
        }
        float v = acc + bias[co];
        v = v > 0.0f ? v : v * 0.2f;
        v = v + sum_t[co];
        v = fminf(fmaxf(v, -1.0f), 1.0f);
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
