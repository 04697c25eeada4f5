// level3/16: DenseNet201 (level3/15, DenseNet121, is the same network with shallower blocks).
//   features: conv7x7 stride 2 (no bias) -> BatchNorm2d -> ReLU -> MaxPool2d 3x3 stride 2
//   dense blocks, each but the last followed by a transition layer:
//     dense layer i (input channels C_i = C0 + i*growth):
//       new = Dropout(0)(conv3x3(ReLU(BatchNorm2d(feat[:, :C_i]))))   (no conv bias)
//       feat[:, C_i:C_i+growth] = new
//     so the block's output is [x, new_0, new_1, ...] along channels (torch.cat order); feat is
//     one (N, C0 + L*growth, H, W) buffer, each layer reads its leading C_i channels in place
//     (channel stride = the buffer's total channels) and writes its new features into their
//     channel slice (write_channels).
//     transition: BatchNorm2d -> ReLU -> conv1x1 (no bias) -> AvgPool2d 2 stride 2
//   final BatchNorm2d -> ReLU -> adaptive average pool to 1x1 -> flatten -> nn.Linear.
// BatchNorm2d in training mode uses batch statistics (two-pass mean and biased variance per
// channel, fp32, summed in blocks: one partial per image, then across images).

#define TILE 32
#define RED_BLOCK 512
#define POOL_BLOCK 256

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

// MaxPool2d (NCHW), one thread per output element; padded taps are skipped.
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

// AdaptiveAvgPool2d (NCHW), one block per output element (n, c, oh, ow): the window is rows
// [floor(oh * H / OH), ceil((oh + 1) * H / OH)) and likewise for columns, as PyTorch takes it;
// its sum is a block tree reduction in fp32.
extern "C" __global__ void adaptive_avgpool2d(const float* __restrict__ x, float* __restrict__ y, int H,
                                              int W, int OH, int OW) {
    __shared__ float sdata[POOL_BLOCK];
    int tid = threadIdx.x;
    long long o = blockIdx.x;
    int ow = (int)(o % OW);
    int oh = (int)((o / OW) % OH);
    long long nc = o / ((long long)OW * OH);
    int h0 = (int)(((long long)oh * H) / OH);
    int h1 = (int)(((long long)(oh + 1) * H + OH - 1) / OH);
    int w0 = (int)(((long long)ow * W) / OW);
    int w1 = (int)(((long long)(ow + 1) * W + OW - 1) / OW);
    int wh = h1 - h0;
    int ww = w1 - w0;
    int count = wh * ww;
    const float* xp = x + nc * H * W;
    float acc = 0.0f;
    for (int j = tid; j < count; j += blockDim.x) {
        int ih = h0 + j / ww;
        int iw = w0 + j % ww;
        acc += xp[(long long)ih * W + iw];
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        y[o] = sdata[0] / (float)count;
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
