// ConvTranspose3d (gather: one thread per output element), then softmax over channels
// (max subtracted) and sigmoid, one thread per (n, d, h, w).

extern "C" __global__ void conv_transpose3d(const float* __restrict__ x, const float* __restrict__ w,
                                            const float* __restrict__ b, float* __restrict__ y, int N,
                                            int Cin, int D, int H, int W, int Cout, int OD, int OH, int OW,
                                            int KD, int KH, int KW, int sd, int sh, int sw, int pd, int ph,
                                            int pw, int dd, int dh, int dw, int groups, int has_bias,
                                            long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int od = (int)((i / ((long long)OW * OH)) % OD);
        int co = (int)((i / ((long long)OW * OH * OD)) % Cout);
        int n = (int)(i / ((long long)OW * OH * OD * Cout));
        int cin_g = Cin / groups;
        int cout_g = Cout / groups;
        int g = co / cout_g;
        int cl = co - g * cout_g;
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
                    for (int ci = 0; ci < cin_g; ++ci) {
                        int c = g * cin_g + ci;
                        float xv = x[((((long long)n * Cin + c) * D + id) * H + ih) * W + iw];
                        float wv = w[((((long long)c * cout_g + cl) * KD + kd) * KH + kh) * KW + kw];
                        acc += xv * wv;
                    }
                }
            }
        }
        if (has_bias) acc += b[co];
        y[i] = acc;
    }
}

extern "C" __global__ void softmax_channels_sigmoid(
        const float* __restrict__ y, float* __restrict__ out, int C, long long spatial, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long n = i / spatial;
        long long s = i % spatial;
        const float* p = y + n * C * spatial + s;
        float* q = out + n * C * spatial + s;
        float mx = -INFINITY;
        for (int c = 0; c < C; ++c) {
            mx = fmaxf(mx, p[(long long)c * spatial]);
        }
        float acc = 0.0f;
        for (int c = 0; c < C; ++c) {
            acc += expf(p[(long long)c * spatial] - mx);
        }
        for (int c = 0; c < C; ++c) {
            float sm = expf(p[(long long)c * spatial] - mx) / acc;
            q[(long long)c * spatial] = 1.0f / (1.0f + expf(-sm));
        }
    }
}
