// level3/45: U-Net whose DoubleConv blocks are conv3x3 (pad 1, bias) -> BatchNorm2d -> Softmax over
// the last dim (W) -> conv3x3 -> BatchNorm2d -> Softmax(W). Encoder: four DoubleConvs each followed
// by MaxPool2d(2, 2); the bottleneck DoubleConv; decoder: ConvTranspose2d(k 2, s 2) upsampling,
// concatenated along channels with the matching encoder output (upsampled first, as torch.cat
// in the reference) by channel-slice writes, then a DoubleConv; a final 1x1 conv.
// BatchNorm2d in training mode uses batch statistics (two-pass mean and biased variance, fp32).

#define TILE 32
#define RED_BLOCK 512
#define SM_BLOCK 256

// Conv2d with bias (NCHW, groups = 1) as a tiled implicit GEMM:
// rows = output pixels m = (n, oh, ow), columns = output channels co,
// reduction index k = (ci, kh, kw) over K = C_in * KH * KW; weight is (C_out, K) row-major.
// Block (TILE, TILE): threadIdx.x walks pixels, threadIdx.y walks channels.
// The output is written at channel c_off + co of a tensor with C_total channels.
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
        float part = 0.0f;
        for (int kk = 0; kk < TILE; ++kk) {
            part += As[kk][tx] * Bs[kk][ty];
        }
        acc += part;
        __syncthreads();
    }
    if (m < M && co < C_out) {
        y[(((long long)n * C_total + c_off + co) * OH + oh) * OW + ow] = acc + b[co];
    }
}

// ConvTranspose2d with bias (NCHW, groups = 1) as a tiled implicit GEMM over the same
// (pixel, channel) output tiles: reduction index k = (ci, kh, kw); input row ih feeds output
// row oh through tap kh when oh = ih * stride_h - pad_h + kh * dil_h, so the A tile takes
// th = oh + pad_h - kh * dil_h and reads ih = th / stride_h only if th >= 0, th divides by
// stride_h and ih < H (zero otherwise; likewise for columns). Weight is (C_in, C_out, KH, KW).
// The output is written at channel c_off + co of a tensor with C_total channels.
extern "C" __global__ void conv_transpose2d_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                                  const float* __restrict__ b, float* __restrict__ y,
                                                  int N, int C_in, int H, int W, int C_out, int OH, int OW,
                                                  int KH, int KW, int stride_h, int stride_w, int pad_h,
                                                  int pad_w, int dil_h, int dil_w, int c_off, int C_total) {
    __shared__ float As[TILE][TILE];      // As[kk][pixel]
    __shared__ float Bs[TILE][TILE + 1];  // Bs[kk][channel]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long M = (long long)N * OH * OW;
    int KHW = KH * KW;
    int K = C_in * KHW;
    long long m = (long long)blockIdx.x * TILE + tx;
    int ow = 0;
    int oh = 0;
    int n = 0;
    if (m < M) {
        ow = (int)(m % OW);
        oh = (int)((m / OW) % OH);
        n = (int)(m / ((long long)OW * OH));
    }
    const float* xn = x + (long long)n * C_in * H * W;
    int co = blockIdx.y * TILE + ty;
    int cob = blockIdx.y * TILE + tx;  // the output channel whose weights this thread loads
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + ty;
        float av = 0.0f;
        if (m < M && ka < K) {
            int ci = ka / KHW;
            int r = ka % KHW;
            int th = oh + pad_h - (r / KW) * dil_h;
            int tw = ow + pad_w - (r % KW) * dil_w;
            int ih = th / stride_h;
            int iw = tw / stride_w;
            if (th >= 0 && th % stride_h == 0 && ih < H && tw >= 0 && tw % stride_w == 0 && iw < W) {
                av = xn[((long long)ci * H + ih) * W + iw];
            }
        }
        As[ty][tx] = av;
        // B tile row kk = ty, channel tx: weight (ci, cob, kh, kw) of the reduction index k0 + ty
        float bv = 0.0f;
        if (cob < C_out && ka < K) {
            int ci = ka / KHW;
            int r = ka % KHW;
            bv = w[((long long)ci * C_out + cob) * KHW + r];
        }
        Bs[ty][tx] = bv;
        __syncthreads();
        float part = 0.0f;
        for (int kk = 0; kk < TILE; ++kk) {
            part += As[kk][tx] * Bs[kk][ty];
        }
        acc += part;
        __syncthreads();
    }
    if (m < M && co < C_out) {
        y[(((long long)n * C_total + c_off + co) * OH + oh) * OW + ow] = acc + b[co];
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

// Softmax over the last dim: x is (rows, len) contiguous. One block per row, three passes:
// the row max (a -INFINITY-seeded fmaxf tree), the sum of expf(x - max), the normalised output.
extern "C" __global__ void softmax_lastdim(const float* __restrict__ x, float* __restrict__ out,
                                           long long rows, int len) {
    __shared__ float sdata[SM_BLOCK];
    long long r = blockIdx.x;
    const float* xr = x + r * len;
    float m = -INFINITY;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            m = fmaxf(m, xr[j]);
        }
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    float rowmax = sdata[0];
    __syncthreads();
    float acc = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            acc += expf(xr[j] - rowmax);
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float sum = sdata[0];
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            out[r * len + j] = expf(xr[j] - rowmax) / sum;
        }
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

// Copies x (N, C, HW) into channels [c_off, c_off + C) of y (N, C_total, HW): the encoder's
// half of a torch.cat along channels.
extern "C" __global__ void copy_channels(const float* __restrict__ x, float* __restrict__ y, int C,
                                         long long HW, int c_off, int C_total, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long p = i % HW;
        long long nc = i / HW;
        int c = (int)(nc % C);
        long long n = nc / C;
        y[(n * C_total + c_off + c) * HW + p] = x[i];
    }
}
