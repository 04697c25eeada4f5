// level2/23: Conv3d -> GroupNorm -> mean over (C, D, H, W). With the default affine parameters (weight 1, bias 0) the output is ~0 for every sample.

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

// GroupNorm: one block of 256 threads per (n, group) normalises the group's C/G channels x S
// spatial elements (contiguous) with two-pass mean / biased variance, then applies the
// per-channel affine weight and bias.
extern "C" __global__ void group_norm(const float* __restrict__ y, const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ out, int N, int C,
                                      int G, long long S, float eps) {
    __shared__ float sdata[256];
    long long ng = blockIdx.x;
    if (ng >= (long long)N * G) return;
    int g = (int)(ng % G);
    int cpg = C / G;
    long long count = (long long)cpg * S;
    const float* p = y + ng * count;
    float* q = out + ng * count;
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
    float mean = sdata[0] / count;
    __syncthreads();
    float vacc = 0.0f;
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
        float d = p[j] - mean;
        vacc += d * d;
    }
    sdata[threadIdx.x] = vacc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float rstd = rsqrtf(sdata[0] / count + eps);
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
        int c = g * cpg + (int)(j / S);
        q[j] = (p[j] - mean) * rstd * gamma[c] + beta[c];
    }
}

// Mean over everything but the batch dim: one block of 256 threads per sample.
extern "C" __global__ void sample_mean(const float* __restrict__ y, float* __restrict__ out, int N,
                                       long long S) {
    __shared__ float sdata[256];
    int n = blockIdx.x;
    if (n >= N) return;
    const float* p = y + (long long)n * S;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < S; j += blockDim.x) {
        acc += p[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[n] = sdata[0] / S;
    }
}
