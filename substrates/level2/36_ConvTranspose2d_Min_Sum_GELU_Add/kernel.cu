// ConvTranspose2d (gather: one thread per output element), then min over channels,
// then sum over height, GELU (erf form) and + bias.

extern "C" __global__ void conv_transpose2d(const float* __restrict__ x, const float* __restrict__ w,
                                            const float* __restrict__ b, float* __restrict__ y, int N,
                                            int Cin, int H, int W, int Cout, int OH, int OW, int KH, int KW,
                                            int sh, int sw, int ph, int pw, int dh, int dw, int groups,
                                            long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int co = (int)((i / ((long long)OW * OH)) % Cout);
        int n = (int)(i / ((long long)OW * OH * Cout));
        int cin_g = Cin / groups;
        int cout_g = Cout / groups;
        int g = co / cout_g;
        int cl = co - g * cout_g;
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
                for (int ci = 0; ci < cin_g; ++ci) {
                    int c = g * cin_g + ci;
                    float xv = x[(((long long)n * Cin + c) * H + ih) * W + iw];
                    float wv = w[(((long long)c * cout_g + cl) * KH + kh) * KW + kw];
                    acc += xv * wv;
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// min over the channel axis: one thread per (n, oh, ow)
extern "C" __global__ void channel_min(const float* __restrict__ y, float* __restrict__ m, int C,
                                       long long spatial, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long n = i / spatial;
        long long s = i % spatial;
        const float* p = y + n * C * spatial + s;
        float v = INFINITY;
        for (int c = 0; c < C; ++c) {
            v = fminf(v, p[(long long)c * spatial]);
        }
        m[i] = v;
    }
}

// sum over height, GELU, + bias: one thread per (n, ow)
extern "C" __global__ void sum_h_gelu_bias(const float* __restrict__ m, const float* __restrict__ bias,
                                           float* __restrict__ out, int OH, int OW, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long n = i / OW;
        int ow = (int)(i % OW);
        const float* p = m + n * OH * OW + ow;
        float acc = 0.0f;
        for (int h = 0; h < OH; ++h) {
            acc += p[(long long)h * OW];
        }
        float g = 0.5f * acc * (1.0f + erff(acc * 0.70710678118654752f));
        out[i] = g + bias[0];
    }
}
