// Conv3d -> * multiplier[c] -> InstanceNorm3d (no affine) -> clamp -> * multiplier[c] -> max over channels.

// Conv3d with the multiplier: direct convolution, one thread per output element (n, co, od, oh, ow) over a
// flat index; the sum runs over the input channels of co's group and the kernel window,
// skipping taps that fall in the zero padding.
extern "C" __global__ void conv3d_mul(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ bias, const float* __restrict__ mult,
                                      float* __restrict__ out, int N, int Cin, int D, int H, int W, int Cout,
                                      int Do, int Ho, int Wo, int KD, int KH, int KW, int sd, int sh, int sw,
                                      int pd, int ph, int pw, int dd, int dh, int dw, int groups) {
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
        out[i] = v * mult[co];
    }
}

// Instance statistics (a group of one channel): one block per group of group_size contiguous elements, 256 threads; two-pass
// mean and biased variance in fp32, rstd = 1 / sqrt(var + eps).
extern "C" __global__ void group_stats(const float* __restrict__ y, float* __restrict__ mean,
                                       float* __restrict__ rstd, int num_groups, long long group_size,
                                       float eps) {
    __shared__ float sdata[256];
    int gi = blockIdx.x;
    if (gi >= num_groups) return;  // whole block leaves together, so no barrier is skipped
    const float* yg = y + (long long)gi * group_size;

    float acc = 0.0f;
    for (long long j = threadIdx.x; j < group_size; j += blockDim.x) {
        acc += yg[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mu = sdata[0] / (float)group_size;
    __syncthreads();  // everyone has read the mean before sdata is reused

    float sq = 0.0f;
    for (long long j = threadIdx.x; j < group_size; j += blockDim.x) {
        float d = yg[j] - mu;
        sq += d * d;
    }
    sdata[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mean[gi] = mu;
        rstd[gi] = rsqrtf(sdata[0] / (float)group_size + eps);
    }
}

// Per (n, voxel): max over channels c of clamp((y - mean[n, c]) * rstd[n, c], lo, hi) * mult[c].
extern "C" __global__ void instnorm_clamp_mul_max(
        const float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ rstd,
        const float* __restrict__ mult, float* __restrict__ out, int N, int C, long long S, float lo,
        float hi) {
    long long total = (long long)N * S;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long s = i % S;
        int n = (int)(i / S);
        float m = -INFINITY;
        for (int c = 0; c < C; ++c) {
            int r = n * C + c;
            float z = (y[(long long)r * S + s] - mean[r]) * rstd[r];
            z = fminf(fmaxf(z, lo), hi) * mult[c];
            m = fmaxf(m, z);
        }
        out[i] = m;
    }
}
