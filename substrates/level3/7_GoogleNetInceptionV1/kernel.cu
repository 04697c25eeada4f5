// level3/7: GoogleNet InceptionV1. conv7x7 s2 p3 -> ReLU -> maxpool 3 s2 p1 -> conv1x1 -> ReLU
// -> conv3x3 p1 -> ReLU -> maxpool 3 s2 p1, then nine inception modules (with maxpool 3 s2 p1
// after 3b and 4e), AdaptiveAvgPool2d((1, 1)), flatten, Dropout(0.0) (the identity) and
// nn.Linear. An inception module's four branches read the same input and write their channel
// slices of one output, in the order of its torch.cat:
// [conv1x1] [conv1x1 -> conv3x3 pad 1] [conv1x1 -> conv5x5 pad 2] [maxpool 3 s1 p1 -> conv1x1].
// Every conv has a bias; inside the inception modules there is no activation.

#define TILE 32

// Conv2d with bias (NCHW, groups = 1) as a tiled implicit GEMM:
// rows = output pixels m = (n, oh, ow), columns = output channels co,
// reduction index k = (ci, kh, kw) over K = C_in * KH * KW; weight is (C_out, K) row-major.
// Block (TILE, TILE): threadIdx.x walks pixels, threadIdx.y walks channels.
// The output is written at channel c_off + co of a tensor with C_total channels (a slice of
// the concatenated output, or a whole scratch tensor with c_off = 0, C_total = C_out).
extern "C" __global__ void conv2d_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ b, float* __restrict__ y, int N,
                                        int C_in, int H, int W, int C_out, int OH, int OW, int KH, int KW,
                                        int stride_h, int stride_w, int pad_h, int pad_w, int dil_h,
                                        int dil_w, int c_off, int C_total) {
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
        y[(((long long)n * C_total + c_off + co) * OH + oh) * OW + ow] = acc + b[co];
    }
}

// F.relu: max(x, 0)
extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

// MaxPool2d (NCHW), one thread per output element; padded taps are skipped (PyTorch pads
// max pooling with -inf), the max seeded with -INFINITY.
extern "C" __global__ void maxpool2d(const float* __restrict__ x, float* __restrict__ y, int H, int W,
                                     int OH, int OW, int KH, int KW, int stride_h, int stride_w,
                                     int pad_h, int pad_w, int dil_h, int dil_w, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        long long nc = i / ((long long)OW * OH);
        const float* xp = x + nc * H * W;
        float mx = -INFINITY;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * stride_h - pad_h + kh * dil_h;
            if (ih >= 0 && ih < H) {
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * stride_w - pad_w + kw * dil_w;
                    if (iw >= 0 && iw < W) {
                        mx = fmaxf(mx, xp[(long long)ih * W + iw]);
                    }
                }
            }
        }
        y[i] = mx;
    }
}

// AdaptiveAvgPool2d (NCHW), one thread per output element, with PyTorch's window:
// rows [floor(oh * H / OH), ceil((oh + 1) * H / OH)), columns likewise.
extern "C" __global__ void adaptive_avgpool2d(const float* __restrict__ x, float* __restrict__ y, int H,
                                              int W, int OH, int OW, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        long long nc = i / ((long long)OW * OH);
        const float* xp = x + nc * H * W;
        int hstart = (int)(((long long)oh * H) / OH);
        int hend = (int)(((long long)(oh + 1) * H + OH - 1) / OH);
        int wstart = (int)(((long long)ow * W) / OW);
        int wend = (int)(((long long)(ow + 1) * W + OW - 1) / OW);
        float acc = 0.0f;
        for (int ih = hstart; ih < hend; ++ih) {
            for (int iw = wstart; iw < wend; ++iw) {
                acc += xp[(long long)ih * W + iw];
            }
        }
        y[i] = acc / (float)((hend - hstart) * (wend - wstart));
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
