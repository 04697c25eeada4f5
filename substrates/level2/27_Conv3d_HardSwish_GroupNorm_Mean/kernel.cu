// level2/27: Conv3d -> HardSwish -> GroupNorm -> mean over (D, H, W).

// Conv3d (NCDHW), one thread per output element: gather over the receptive field.
// weight: (C_out, C_in / groups, KD, KH, KW); bias: (C_out).
extern "C" __global__ void conv3d_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int N,
                                          int C_in, int D, int H, int W, int C_out, int OD, int OH, int OW,
                                          int KD, int KH, int KW, int stride_d, int stride_h, int stride_w,
                                          int pad_d, int pad_h, int pad_w, int dil_d, int dil_h, int dil_w,
                                          int groups) {
    long long total = (long long)N * C_out * OD * OH * OW;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int od = (int)((i / ((long long)OW * OH)) % OD);
        int co = (int)((i / ((long long)OW * OH * OD)) % C_out);
        int n = (int)(i / ((long long)OW * OH * OD * C_out));
        int cin_g = C_in / groups;
        int cout_g = C_out / groups;
        int g = co / cout_g;
        float acc = 0.0f;
        for (int ci = 0; ci < cin_g; ci++) {
            const float* xc = x + ((long long)n * C_in + g * cin_g + ci) * D * H * W;
            const float* wc = w + ((long long)co * cin_g + ci) * KD * KH * KW;
            for (int kd = 0; kd < KD; kd++) {
                int id = od * stride_d - pad_d + kd * dil_d;
                if (id >= 0 && id < D) {
                    for (int kh = 0; kh < KH; kh++) {
                        int ih = oh * stride_h - pad_h + kh * dil_h;
                        if (ih >= 0 && ih < H) {
                            for (int kw = 0; kw < KW; kw++) {
                                int iw = ow * stride_w - pad_w + kw * dil_w;
                                if (iw >= 0 && iw < W) {
                                    acc += xc[((long long)id * H + ih) * W + iw] *
                                           wc[(kd * KH + kh) * KW + kw];
                                }
                            }
                        }
                    }
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// HardSwish, elementwise: v * min(max(v + 3, 0), 6) / 6.
extern "C" __global__ void hardswish(const float* __restrict__ y, float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i];
        out[i] = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
}

// GroupNorm statistics: one block of 256 threads per (n, group) over its C/G channels x S
// elements (contiguous), two-pass mean / biased variance. Writes mean and 1 / sqrt(var + eps).
extern "C" __global__ void group_norm_stats(const float* __restrict__ y, float* __restrict__ mean,
                                            float* __restrict__ rstd, int N, int C, int G, long long S,
                                            float eps) {
    __shared__ float sdata[256];
    long long ng = blockIdx.x;
    if (ng >= (long long)N * G) return;
    long long count = (long long)(C / G) * S;
    const float* p = y + ng * count;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
        acc += p[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float m = sdata[0] / count;
    __syncthreads();
    float vacc = 0.0f;
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
        float d = p[j] - m;
        vacc += d * d;
    }
    sdata[threadIdx.x] = vacc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mean[ng] = m;
        rstd[ng] = rsqrtf(sdata[0] / count + eps);
    }
}

// Spatial mean of the group-normalised (and affine-transformed) values: one block of 256
// threads per (n, c).
extern "C" __global__ void group_norm_spatial_mean(
        const float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ rstd,
        const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ out, int N,
        int C, int G, long long S) {
    __shared__ float sdata[256];
    long long nc = blockIdx.x;
    if (nc >= (long long)N * C) return;
    int c = (int)(nc % C);
    long long n = nc / C;
    long long ng = n * G + c / (C / G);
    const float* p = y + nc * S;
    float m = mean[ng];
    float r = rstd[ng];
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < S; j += blockDim.x) {
        acc += (p[j] - m) * r * gamma[c] + beta[c];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[nc] = sdata[0] / S;
    }
}
