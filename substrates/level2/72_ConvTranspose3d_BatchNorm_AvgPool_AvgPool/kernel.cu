// ConvTranspose3d -> BatchNorm3d (training mode: batch statistics, biased variance) -> AvgPool3d -> AvgPool3d.

// ConvTranspose3d as a gather: one thread per OUTPUT element (n, co, od, oh, ow) over a
// flat index. Input (id, ih, iw) feeds output od = id * sd - pd + kd * dd (same for h, w), so
// each tap (kd, kh, kw) contributes only when od + pd - kd * dd is a non-negative multiple of sd
// whose quotient is inside the input. Weight layout (Cin, Cout / groups, KD, KH, KW).
extern "C" __global__ void conv_transpose3d_fwd(const float* __restrict__ x, const float* __restrict__ w,
                                                const float* __restrict__ bias, float* __restrict__ out,
                                                int N, int Cin, int D, int H, int W, int Cout, int Do,
                                                int Ho, int Wo, int KD, int KH, int KW, int sd, int sh,
                                                int sw, int pd, int ph, int pw, int dd, int dh, int dw,
                                                int groups) {
    long long total = (long long)N * Cout * Do * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int od = (int)((i / ((long long)Wo * Ho)) % Do);
        int co = (int)((i / ((long long)Wo * Ho * Do)) % Cout);
        int n = (int)(i / ((long long)Wo * Ho * Do * Cout));
        int cin_g = Cin / groups;
        int cout_g = Cout / groups;
        int g = co / cout_g;
        int cl = co - g * cout_g;  // co's index inside its group
        long long xstride = (long long)D * H * W;               // between input channels of x
        long long wstride = (long long)cout_g * KD * KH * KW;   // between input channels of w
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
                    const float* xp = x + ((long long)n * Cin + g * cin_g) * xstride + ((long long)id * H + ih) * W + iw;
                    const float* wp = w + ((long long)g * cin_g * cout_g + cl) * KD * KH * KW + (kd * KH + kh) * KW + kw;
                    for (int ci = 0; ci < cin_g; ++ci) {
                        acc += xp[ci * xstride] * wp[ci * wstride];
                    }
                }
            }
        }
        float v = acc + bias[co];
        out[i] = v;
    }
}

// BatchNorm training statistics of an (N, C, S) tensor, in two stages so every sum is short:
// per-(n, c) row partial sums by a block tree, then per-channel sums of the N partials by a tree.

// rowsum[r] = sum of row r (S contiguous elements, r = n * C + c); one block per row, 256 threads.
extern "C" __global__ void row_sum(const float* __restrict__ y, float* __restrict__ rowsum, int rows,
                                   long long S) {
    __shared__ float sdata[256];
    int r = blockIdx.x;
    if (r >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* yr = y + (long long)r * S;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < S; j += blockDim.x) {
        acc += yr[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) rowsum[r] = sdata[0];
}

// rowsq[r] = sum over row r of (y - mean[c])^2, c = r % C; one block per row, 256 threads.
extern "C" __global__ void row_sq_dev(const float* __restrict__ y, const float* __restrict__ mean,
                                      float* __restrict__ rowsq, int rows, int C, long long S) {
    __shared__ float sdata[256];
    int r = blockIdx.x;
    if (r >= rows) return;  // whole block leaves together
    const float* yr = y + (long long)r * S;
    float mu = mean[r % C];
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < S; j += blockDim.x) {
        float d = yr[j] - mu;
        acc += d * d;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) rowsq[r] = sdata[0];
}

// mean[c] = sum_n rowsum[n * C + c] / count; one block per channel, 256 threads.
extern "C" __global__ void channel_mean(const float* __restrict__ rowsum, float* __restrict__ mean, int N,
                                        int C, long long count) {
    __shared__ float sdata[256];
    int c = blockIdx.x;
    if (c >= C) return;  // whole block leaves together
    float acc = 0.0f;
    for (int n = threadIdx.x; n < N; n += blockDim.x) {
        acc += rowsum[(long long)n * C + c];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) mean[c] = sdata[0] / (float)count;
}

// rstd[c] = 1 / sqrt(sum_n rowsq[n * C + c] / count + eps) (biased variance); one block per channel.
extern "C" __global__ void channel_rstd(const float* __restrict__ rowsq, float* __restrict__ rstd, int N,
                                        int C, long long count, float eps) {
    __shared__ float sdata[256];
    int c = blockIdx.x;
    if (c >= C) return;  // whole block leaves together
    float acc = 0.0f;
    for (int n = threadIdx.x; n < N; n += blockDim.x) {
        acc += rowsq[(long long)n * C + c];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) rstd[c] = rsqrtf(sdata[0] / (float)count + eps);
}

// AvgPool3d (no padding, floor mode, so every window lies inside the input) of the batch-normalised
// input, one thread per output element; the normalisation is applied to each tap as it is read.
extern "C" __global__ void bn_avg_pool3d(const float* __restrict__ y, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, float* __restrict__ out, int N,
                                         int C, int D, int H, int W, int Do, int Ho, int Wo, int KD, int KH,
                                         int KW, int sd, int sh, int sw) {
    long long total = (long long)N * C * Do * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int od = (int)((i / ((long long)Wo * Ho)) % Do);
        long long nc = i / ((long long)Wo * Ho * Do);
        int c = (int)(nc % C);
        const float* yp = y + nc * D * H * W;
        float mu = mean[c];
        float rs = rstd[c];
        float acc = 0.0f;
        for (int kd = 0; kd < KD; ++kd) {
            for (int kh = 0; kh < KH; ++kh) {
                for (int kw = 0; kw < KW; ++kw) {
                    long long idx = ((long long)(od * sd + kd) * H + (oh * sh + kh)) * W + (ow * sw + kw);
                    acc += (yp[idx] - mu) * rs * gamma[c] + beta[c];
                }
            }
        }
        out[i] = acc / (KD * KH * KW);
    }
}

// AvgPool3d (no padding, floor mode), one thread per output element.
extern "C" __global__ void avg_pool3d(const float* __restrict__ x, float* __restrict__ out, int NC, int D,
                                      int H, int W, int Do, int Ho, int Wo, int KD, int KH, int KW, int sd,
                                      int sh, int sw) {
    long long total = (long long)NC * Do * Ho * Wo;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % Wo);
        int oh = (int)((i / Wo) % Ho);
        int od = (int)((i / ((long long)Wo * Ho)) % Do);
        long long nc = i / ((long long)Wo * Ho * Do);
        const float* xp = x + nc * D * H * W;
        float acc = 0.0f;
        for (int kd = 0; kd < KD; ++kd) {
            for (int kh = 0; kh < KH; ++kh) {
                for (int kw = 0; kw < KW; ++kw) {
                    acc += xp[((long long)(od * sd + kd) * H + (oh * sh + kh)) * W + (ow * sw + kw)];
                }
            }
        }
        out[i] = acc / (KD * KH * KW);
    }
}
