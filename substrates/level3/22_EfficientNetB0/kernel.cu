// level3/22: EfficientNetB0. A stem conv3x3(stride 2) -> BN -> ReLU, then thirteen MBConv blocks:
// [expand conv1x1 -> BN -> ReLU6 when expand_ratio != 1] -> depthwise conv KxK(stride,
// pad (K-1)/2) -> BN -> ReLU6 -> project conv1x1 -> BN, plus the identity when stride is 1 and
// in_channels == out_channels; then conv1x1 -> BN -> ReLU, adaptive average pool to (1, 1),
// flatten and nn.Linear. Convs have no bias. BatchNorm2d in training mode uses batch statistics
// (two-pass mean and biased variance per channel, fp32).

#define TILE 32
#define RED_BLOCK 512

// Conv2d without bias (NCHW, any groups) as a tiled implicit GEMM, one group per blockIdx.z:
// rows = output pixels m = (n, oh, ow), columns = the group's output channels,
// reduction index k = (ci, kh, kw) over K = Cin_g * KH * KW, ci within the group;
// weight is (C_out, Cin_g * KH * KW) row-major. Block (TILE, TILE): threadIdx.x walks pixels,
// threadIdx.y walks channels.
extern "C" __global__ void conv2d_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, int N, int C_in, int H, int W, int C_out,
                                        int OH, int OW, int KH, int KW, int stride_h, int stride_w,
                                        int pad_h, int pad_w, int dil_h, int dil_w, int groups) {
    __shared__ float As[TILE][TILE];      // As[kk][pixel]
    __shared__ float Bs[TILE][TILE + 1];  // Bs[kk][channel]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int g = blockIdx.z;
    int Cin_g = C_in / groups;
    int Cout_g = C_out / groups;
    long long M = (long long)N * OH * OW;
    int KHW = KH * KW;
    int K = Cin_g * KHW;
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
    const float* xn = x + ((long long)n * C_in + (long long)g * Cin_g) * H * W;
    // the output channel (within the group) this thread computes, and the weight row it loads
    int col = blockIdx.y * TILE + ty;
    int co = g * Cout_g + col;
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
        Bs[tx][ty] = (col < Cout_g && kb < K) ? w[(long long)co * K + kb] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[kk][tx] * Bs[kk][ty];
        }
        __syncthreads();
    }
    if (m < M && col < Cout_g) {
        y[(((long long)n * C_out + co) * OH + oh) * OW + ow] = acc;
    }
}

// Depthwise Conv2d without bias (groups = C_in = C_out), one thread per output element;
// weight is (C, 1, KH, KW); padded taps are skipped.
extern "C" __global__ void conv2d_depthwise(const float* __restrict__ x, const float* __restrict__ w,
                                            float* __restrict__ y, int C, int H, int W, int OH, int OW,
                                            int KH, int KW, int stride_h, int stride_w, int pad_h,
                                            int pad_w, int dil_h, int dil_w, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        long long nc = i / ((long long)OW * OH);
        int c = (int)(nc % C);
        const float* xp = x + nc * H * W;
        const float* wp = w + (long long)c * KH * KW;
        float acc = 0.0f;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * stride_h - pad_h + kh * dil_h;
            if (ih >= 0 && ih < H) {
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * stride_w - pad_w + kw * dil_w;
                    if (iw >= 0 && iw < W) {
                        acc += xp[(long long)ih * W + iw] * wp[kh * KW + kw];
                    }
                }
            }
        }
        y[i] = acc;
    }
}

// One block per channel: batch mean and biased variance over (N, H, W), two passes in fp32.
extern "C" __global__ void bn2d_stats(const float* __restrict__ y, float* __restrict__ mean,
                                      float* __restrict__ var, int N, int C, long long HW) {
    __shared__ float sdata[RED_BLOCK];
    int tid = threadIdx.x;
    int c = blockIdx.x;
    long long count = (long long)N * HW;

    float acc = 0.0f;
    for (int n = 0; n < N; ++n) {
        const float* yp = y + ((long long)n * C + c) * HW;
        for (long long j = tid; j < HW; j += blockDim.x) {
            acc += yp[j];
        }
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
        const float* yp = y + ((long long)n * C + c) * HW;
        for (long long j = tid; j < HW; j += blockDim.x) {
            float d = yp[j] - mu;
            acc2 += d * d;
        }
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

// out = (y - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]
extern "C" __global__ void bn2d_apply(const float* __restrict__ y, const float* __restrict__ mean,
                                      const float* __restrict__ var, const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ out, int C,
                                      long long HW, long long total, float eps) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = (int)((i / HW) % C);
        out[i] = (y[i] - mean[c]) * rsqrtf(var[c] + eps) * gamma[c] + beta[c];
    }
}

// nn.ReLU / F.relu: max(x, 0)
extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

// nn.ReLU6: min(max(x, 0), 6)
extern "C" __global__ void relu6_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fminf(fmaxf(v, 0.0f), 6.0f);
    }
}

// out = a + b: the residual add
extern "C" __global__ void add_forward(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}

// AdaptiveAvgPool2d (NCHW), one block per output element (blockIdx.x = (n, c, oh, ow) flat),
// with PyTorch's window: rows [floor(oh * H / OH), ceil((oh + 1) * H / OH)), columns likewise.
// The threads stride over the window, then a shared-memory tree sums their partials.
extern "C" __global__ void adaptive_avgpool2d(const float* __restrict__ x, float* __restrict__ y, int H,
                                              int W, int OH, int OW) {
    __shared__ float sdata[RED_BLOCK];
    int tid = threadIdx.x;
    long long i = blockIdx.x;
    int ow = (int)(i % OW);
    int oh = (int)((i / OW) % OH);
    long long nc = i / ((long long)OW * OH);
    const float* xp = x + nc * H * W;
    int hstart = (int)(((long long)oh * H) / OH);
    int hend = (int)(((long long)(oh + 1) * H + OH - 1) / OH);
    int wstart = (int)(((long long)ow * W) / OW);
    int wend = (int)(((long long)(ow + 1) * W + OW - 1) / OW);
    int wh = hend - hstart;
    int ww = wend - wstart;
    int count = wh * ww;
    float acc = 0.0f;
    for (int j = tid; j < count; j += blockDim.x) {
        int ih = hstart + j / ww;
        int iw = wstart + j % ww;
        acc += xp[(long long)ih * W + iw];
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        y[i] = sdata[0] / (float)count;
    }
}


// nn.Linear: y = x W^T + b with x (M, K), W (N, K), y (M, N); tiled shared-memory GEMM.
extern "C" __global__ void linear_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                          int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int wrow = blockIdx.x * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int kk = k0 + tx;
        As[ty][tx] = (row < M && kk < K) ? x[(long long)row * K + kk] : 0.0f;
        Bs[tx][ty] = (wrow < N && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) {
            acc += As[ty][t] * Bs[t][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        y[(long long)row * N + col] = acc + b[col];
    }
}
