// level3/14: DenseNet121 dense block. Per layer i (input channels C_i = C0 + i*growth):
//   new = Dropout(0)(conv3x3(ReLU(BatchNorm2d(feat[:, :C_i]))))   (no conv bias)
//   feat[:, C_i:C_i+growth] = new
// so the output is [x, new_0, new_1, ...] along channels (torch.cat(features, 1) order).
// feat is one (N, C0 + L*growth, H, W) buffer; each layer reads its leading C_i channels in place
// (channel stride = the buffer's total channels) and its new features are written into their
// channel slice (write_channels). BatchNorm2d in training mode uses batch statistics (two-pass
// mean and biased variance per channel, fp32, summed in blocks: one partial per image, then
// across images).

#define TILE 32
#define RED_BLOCK 512

// One block per channel c < gridDim.x of x, laid out (N, C_stride, HW) (the leading channels of a
// larger buffer): batch mean and biased variance over (N, H, W), two passes in fp32.
// Each thread sums its share of one image's plane into part, then adds part to acc, so no
// serial sum runs over more than HW / blockDim.x or N terms.
extern "C" __global__ void bn2d_stats(const float* __restrict__ x, float* __restrict__ mean,
                                      float* __restrict__ var, int N, int C_stride, long long HW) {
    __shared__ float sdata[RED_BLOCK];
    int tid = threadIdx.x;
    int c = blockIdx.x;
    long long count = (long long)N * HW;

    float acc = 0.0f;
    for (int n = 0; n < N; ++n) {
        const float* xp = x + ((long long)n * C_stride + c) * HW;
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
        const float* xp = x + ((long long)n * C_stride + c) * HW;
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

// out (N, C, HW) = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c], reading x laid out
// (N, C_stride, HW): its leading C channels. total = N * C * HW.
extern "C" __global__ void bn2d_apply(const float* __restrict__ x, const float* __restrict__ mean,
                                      const float* __restrict__ var, const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ out, int C,
                                      int C_stride, long long HW, long long total, float eps) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long p = i % HW;
        long long nc = i / HW;
        int c = (int)(nc % C);
        long long n = nc / C;
        float v = x[(n * C_stride + c) * HW + p];
        out[i] = (v - mean[c]) * rsqrtf(var[c] + eps) * gamma[c] + beta[c];
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

// dst[:, c_off:c_off+C] = src, with src (N, C, HW) and dst (N, C_total, HW): one layer's features
// into their channel slice of the concatenated buffer. total = N * C * HW.
extern "C" __global__ void write_channels(const float* __restrict__ src, float* __restrict__ dst, int C,
                                          int c_off, int C_total, long long HW, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long p = i % HW;
        long long nc = i / HW;
        int c = (int)(nc % C);
        long long n = nc / C;
        dst[(n * C_total + c_off + c) * HW + p] = src[i];
    }
}
