// level3/13: DenseNet121 transition layer. BatchNorm2d -> ReLU -> conv1x1 (no bias) -> AvgPool2d 2.
// BatchNorm2d in training mode uses batch statistics (two-pass mean and biased variance per
// channel, fp32, summed in blocks: one partial per image, then across images).

#define TILE 32
#define RED_BLOCK 512

// One block per channel: batch mean and biased variance over (N, H, W), two passes in fp32.
// Each thread sums its share of one image's plane into part, then adds part to acc, so no
// serial sum runs over more than HW / blockDim.x or N terms.
extern "C" __global__ void bn2d_stats(const float* __restrict__ x, float* __restrict__ mean,
                                      float* __restrict__ var, int N, int C, long long HW) {
    __shared__ float sdata[RED_BLOCK];
    int tid = threadIdx.x;
    int c = blockIdx.x;
    long long count = (long long)N * HW;

    float acc = 0.0f;
    for (int n = 0; n < N; ++n) {
        const float* xp = x + ((long long)n * C + c) * HW;
        float part = 0.0f;
        for (long long j = tid; j < HW; j += blockDim.x) {
            part += xp[j];
        }
        acc += part;
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    float mu = sdata[0] / (float)count;
    __syncthreads();

    float acc2 = 0.0f;
    for (int n = 0; n < N; ++n) {
        const float* xp = x + ((long long)n * C + c) * HW;
        float part = 0.0f;
        for (long long j = tid; j < HW; j += blockDim.x) {
            float d = xp[j] - mu;
            part += d * d;
        }
        acc2 += part;
    }
    sdata[tid] = acc2;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        mean[c] = mu;
        var[c] = sdata[0] / (float)count;
    }
}

// out = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]
extern "C" __global__ void bn2d_apply(const float* __restrict__ x, const float* __restrict__ mean,
                                      const float* __restrict__ var, const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ out, int C,
                                      long long HW, long long total, float eps) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = (int)((i / HW) % C);
        out[i] = (x[i] - mean[c]) * rsqrtf(var[c] + eps) * gamma[c] + beta[c];
    }
}

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

// Conv2d without bias (NCHW, groups = 1) as a tiled implicit GEMM:
// rows = output pixels m = (n, oh, ow), columns = output channels co,
// reduction index k = (ci, kh, kw) over K = C_in * KH * KW; weight is (C_out, K) row-major.
// Block (TILE, TILE): threadIdx.x walks pixels, threadIdx.y walks channels.
extern "C" __global__ void conv2d_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, int N, int C_in, int H, int W, int C_out,
                                        int OH, int OW, int KH, int KW, int stride_h, int stride_w,
                                        int pad_h, int pad_w, int dil_h, int dil_w) {
    __shared__ float As[TILE][TILE];      // As[kk][pixel]
    __shared__ float Bs[TILE][TILE + 1];  // Bs[kk][channel]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long M = (long long)N * OH * OW;
    int KHW = KH * KW;
    int K = C_in * KHW;
    // the output pixel this thread loads (A tile) and computes
    long long m = (long long)blockIdx.x * TILE + tx;
    int ow = 0;
    int oh = 0;
    int n = 0;
    if (m < M) {
        ow = (int)(m % OW);
        oh = (int)((m / OW) % OH);
        n = (int)(m / ((long long)OW * OH));
    }
    int ih0 = oh * stride_h - pad_h;
    int iw0 = ow * stride_w - pad_w;
    const float* xn = x + (long long)n * C_in * H * W;
    // the output channel this thread computes, and the weight row it loads (B tile)
    int co = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + ty;
        float av = 0.0f;
        if (m < M && ka < K) {
            int ci = ka / KHW;
            int r = ka % KHW;
            int ih = ih0 + (r / KW) * dil_h;
            int iw = iw0 + (r % KW) * dil_w;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                av = xn[((long long)ci * H + ih) * W + iw];
            }
        }
        As[ty][tx] = av;
        int kb = k0 + tx;
        Bs[tx][ty] = (co < C_out && kb < K) ? w[(long long)co * K + kb] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[kk][tx] * Bs[kk][ty];
        }
        __syncthreads();
    }
    if (m < M && co < C_out) {
        y[(((long long)n * C_out + co) * OH + oh) * OW + ow] = acc;
    }
}

// AvgPool2d (NCHW), one thread per output element, as PyTorch counts it: the window is clipped
// to the padded input for the divisor when count_include_pad is set, to the input otherwise;
// divisor_override (when nonzero) replaces the divisor. A window wholly in padding gives 0.
extern "C" __global__ void avgpool2d(const float* __restrict__ x, float* __restrict__ y, int H, int W,
                                     int OH, int OW, int KH, int KW, int stride_h, int stride_w,
                                     int pad_h, int pad_w, int count_include_pad, int divisor_override,
                                     long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        long long nc = i / ((long long)OW * OH);
        const float* xp = x + nc * H * W;
        int hstart = oh * stride_h - pad_h;
        int wstart = ow * stride_w - pad_w;
        int hend = min(hstart + KH, H + pad_h);
        int wend = min(wstart + KW, W + pad_w);
        int pool_size = (hend - hstart) * (wend - wstart);
        hstart = max(hstart, 0);
        wstart = max(wstart, 0);
        hend = min(hend, H);
        wend = min(wend, W);
        float acc = 0.0f;
        for (int ih = hstart; ih < hend; ++ih) {
            for (int iw = wstart; iw < wend; ++iw) {
                acc += xp[(long long)ih * W + iw];
            }
        }
        int divisor = pool_size;
        if (divisor_override != 0) {
            divisor = divisor_override;
        } else if (!count_include_pad) {
            divisor = (hend - hstart) * (wend - wstart);
        }
        y[i] = (hstart < hend && wstart < wend) ? acc / (float)divisor : 0.0f;
    }
}
