// ConvTranspose3d (gather) with fused * scale1, then AvgPool3d with fused + bias[c] and * scale2.

extern "C" __global__ void conv_transpose3d_scale(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        const float* __restrict__ scale1, float* __restrict__ y, int N, int Cin, int D, int H, int W,
        int Cout, int OD, int OH, int OW, int KD, int KH, int KW, int sd, int sh, int sw, int pd, int ph,
        int pw, int dd, int dh, int dw, int groups, long long total) {
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
        float v = acc + b[co];
        y[i] = v * scale1[0];
    }
}

// AvgPool3d (count_include_pad divisor), then + bias[c] and * scale2
extern "C" __global__ void avg_pool3d_bias_scale(
        const float* __restrict__ y, const float* __restrict__ bias, const float* __restrict__ scale2,
        float* __restrict__ out, int C, int D, int H, int W, int PD, int PH, int PW, int KD, int KH, int KW,
        int sd, int sh, int sw, int pd, int ph, int pw, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % PW);
        int oh = (int)((i / PW) % PH);
        int od = (int)((i / ((long long)PW * PH)) % PD);
        long long nc = i / ((long long)PW * PH * PD);
        int c = (int)(nc % C);
        int d0 = od * sd - pd;
        int h0 = oh * sh - ph;
        int w0 = ow * sw - pw;
        int d1 = min(d0 + KD, D + pd);
        int h1 = min(h0 + KH, H + ph);
        int w1 = min(w0 + KW, W + pw);
        int count = (d1 - d0) * (h1 - h0) * (w1 - w0);
        d0 = max(d0, 0);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        d1 = min(d1, D);
        h1 = min(h1, H);
        w1 = min(w1, W);
        const float* p = y + nc * D * H * W;
        float acc = 0.0f;
        for (int d = d0; d < d1; ++d) {
            for (int h = h0; h < h1; ++h) {
                for (int w = w0; w < w1; ++w) {
                    acc += p[((long long)d * H + h) * W + w];
                }
            }
        }
        float v = acc / (float)count;
        v = v + bias[c];
        out[i] = v * scale2[0];
    }
}
