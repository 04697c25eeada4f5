// level3/4_LeNet5: conv1 -> ReLU -> maxpool 2 -> conv2 -> ReLU -> maxpool 2 -> flatten
// -> fc1 -> ReLU -> fc2 -> ReLU -> fc3.
#define TILE 16

// Conv2d (NCHW, groups 1) as a tiled implicit GEMM: out[m, co] = sum_k A[m, k] * W[co, k] + b[co],
// m = (n, oh, ow) an output pixel, k = (ci, kh, kw) a tap (the weight (C_out, C_in, KH, KW) is the
// row-major (C_out, K) matrix), A[m, k] the input value under that tap (0 outside: zero padding).
// Block (TILE, TILE): threadIdx.x walks pixels, threadIdx.y out-channels; one output per thread.
// The ReLU that follows is fused into the epilogue when apply_relu is set.
extern "C" __global__ void conv2d_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ b, float* __restrict__ y, int N,
                                        int C_in, int H, int W, int C_out, int OH, int OW, int KH, int KW,
                                        int stride_h, int stride_w, int pad_h, int pad_w, int dil_h,
                                        int dil_w, int apply_relu) {
    __shared__ float As[TILE][TILE + 1];  // As[kk][tx]: tap t + kk of pixel m(tx)
    __shared__ float Ws[TILE][TILE + 1];  // Ws[ty][kk]: tap t + kk of out-channel co(ty)
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long M = (long long)N * OH * OW;
    int K = C_in * KH * KW;
    long long m = (long long)blockIdx.x * TILE + tx;  // this thread's output pixel
    int co = blockIdx.y * TILE + ty;                  // this thread's out-channel
    int ow = 0;
    int oh = 0;
    long long n = 0;
    if (m < M) {
        ow = (int)(m % OW);
        long long q = m / OW;
        oh = (int)(q % OH);
        n = q / OH;
    }

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        // A tile: this thread loads tap t + ty of its own pixel m
        int ka = t + ty;
        float av = 0.0f;
        if (m < M && ka < K) {
            int kw = ka % KW;
            int kh = (ka / KW) % KH;
            int ci = ka / (KW * KH);
            int ih = oh * stride_h - pad_h + kh * dil_h;
            int iw = ow * stride_w - pad_w + kw * dil_w;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                av = x[((n * C_in + ci) * H + ih) * W + iw];
            }
        }
        As[ty][tx] = av;
        // W tile: this thread loads tap t + tx of its own out-channel co
        int kb = t + tx;
        Ws[ty][tx] = (co < C_out && kb < K) ? w[(long long)co * K + kb] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += As[i][tx] * Ws[ty][i];
        }
        acc += part;
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (m < M && co < C_out) {
        float v = acc + b[co];
        if (apply_relu) {
            v = fmaxf(v, 0.0f);
        }
        y[((n * C_out + co) * OH + oh) * OW + ow] = v;
    }
}

// Max pooling (NCHW, no padding, floor mode): one thread per output element, seeded with -INFINITY.
extern "C" __global__ void maxpool2d(const float* __restrict__ x, float* __restrict__ y, long long n,
                                     int H, int W, int OH, int OW, int KH, int KW, int stride_h,
                                     int stride_w) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int ow = (int)(i % OW);
        long long q = i / OW;
        int oh = (int)(q % OH);
        long long nc = q / OH;  // (batch, channel) plane
        const float* xc = x + nc * H * W;
        float mx = -INFINITY;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * stride_h + kh;
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * stride_w + kw;
                if (ih < H && iw < W) {
                    mx = fmaxf(mx, xc[(long long)ih * W + iw]);
                }
            }
        }
        y[i] = mx;
    }
}

// Linear: y = x @ W^T + b with x (M, K), W (N, K), b (N), a tiled shared-memory matmul, block
// (TILE, TILE), one thread per output element; each tile's partial product is summed separately.
// The ReLU that follows is fused into the epilogue when apply_relu is set.
extern "C" __global__ void linear_bias_act(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ out, int M,
                                           int N, int K, int apply_relu) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of W
    int wrow = blockIdx.x * TILE + ty;  // the row of W this thread loads

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int kk = t + tx;
        xs[ty][tx] = (row < M && kk < K) ? x[(long long)row * K + kk] : 0.0f;
        ws[ty][tx] = (wrow < N && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += xs[ty][i] * ws[tx][i];
        }
        acc += part;
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (row < M && col < N) {
        float v = acc + b[col];
        if (apply_relu) {
            v = fmaxf(v, 0.0f);
        }
        out[(long long)row * N + col] = v;
    }
}
