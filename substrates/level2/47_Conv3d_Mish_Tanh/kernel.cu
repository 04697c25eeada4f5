// Conv3d (one thread per output) with the fused epilogue tanh(mish(x)).

extern "C" __global__ void conv3d_mish_tanh(const float* __restrict__ x, const float* __restrict__ w,
                                            const float* __restrict__ b, float* __restrict__ y, int N,
                                            int Cin, int D, int H, int W, int Cout, int OD, int OH, int OW,
                                            int KD, int KH, int KW, int sd, int sh, int sw, int pd, int ph,
                                            int pw, int dd, int dh, int dw, int groups, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int od = (int)((i / ((long long)OW * OH)) % OD);
        int co = (int)((i / ((long long)OW * OH * OD)) % Cout);
        int n = (int)(i / ((long long)OW * OH * OD * Cout));
        int cin_g = Cin / groups;
        int g = co / (Cout / groups);
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ++ci) {
            const float* xp = x + ((long long)n * Cin + (long long)g * cin_g + ci) * D * H * W;
            const float* wp = w + ((long long)co * cin_g + ci) * KD * KH * KW;
            for (int kd = 0; kd < KD; ++kd) {
                int id = od * sd - pd + kd * dd;
                if (id < 0 || id >= D) continue;
                for (int kh = 0; kh < KH; ++kh) {
                    int ih = oh * sh - ph + kh * dh;
                    if (ih < 0 || ih >= H) continue;
                    for (int kw = 0; kw < KW; ++kw) {
                        int iw = ow * sw - pw + kw * dw;
                        if (iw >= 0 && iw < W) {
                            acc += xp[((long long)id * H + ih) * W + iw] * wp[(kd * KH + kh) * KW + kw];
                        }
                    }
                }
            }
        }
        float v = acc + b[co];
        // mish: x * tanh(softplus(x)), softplus threshold 20
        float sp = v > 20.0f ? v : log1pf(expf(v));
        v = v * tanhf(sp);
        y[i] = tanhf(v);
    }
}
