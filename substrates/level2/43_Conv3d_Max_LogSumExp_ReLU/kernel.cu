// Conv3d (one thread per output), MaxPool3d (one thread per pooled output),
// then LogSumExp over channels and ReLU (one thread per (n, d, h, w)).

extern "C" __global__ void conv3d(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ b, float* __restrict__ y, int N, int Cin, int D,
                                  int H, int W, int Cout, int OD, int OH, int OW, int KD, int KH, int KW,
                                  int sd, int sh, int sw, int pd, int ph, int pw, int dd, int dh, int dw,
                                  int groups, long long total) {
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
        y[i] = acc + b[co];
    }
}

extern "C" __global__ void max_pool3d(const float* __restrict__ y, float* __restrict__ out, int D, int H,
                                      int W, int PD, int PH, int PW, int KD, int KH, int KW, int sd, int sh,
                                      int sw, int pd, int ph, int pw, int dd, int dh, int dw,
                                      long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % PW);
        int oh = (int)((i / PW) % PH);
        int od = (int)((i / ((long long)PW * PH)) % PD);
        long long nc = i / ((long long)PW * PH * PD);
        const float* p = y + nc * D * H * W;
        float m = -INFINITY;
        for (int kd = 0; kd < KD; ++kd) {
            int id = od * sd - pd + kd * dd;
            if (id < 0 || id >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                int ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * sw - pw + kw * dw;
                    if (iw >= 0 && iw < W) {
                        float v = p[((long long)id * H + ih) * W + iw];
                        if (v > m || isnan(v)) m = v;
                    }
                }
            }
        }
        out[i] = m;
    }
}

// logsumexp over C (max subtracted), then ReLU
extern "C" __global__ void logsumexp_channels_relu(
        const float* __restrict__ p, float* __restrict__ out, int C, long long spatial, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long n = i / spatial;
        long long s = i % spatial;
        const float* q = p + n * C * spatial + s;
        float mx = -INFINITY;
        for (int c = 0; c < C; ++c) {
            mx = fmaxf(mx, q[(long long)c * spatial]);
        }
        float acc = 0.0f;
        for (int c = 0; c < C; ++c) {
            acc += expf(q[(long long)c * spatial] - mx);
        }
        float v = mx + logf(acc);
        out[i] = v > 0.0f ? v : 0.0f;
    }
}
