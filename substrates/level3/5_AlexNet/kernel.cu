// level3/5: AlexNet. Conv2d (+bias) as a tiled implicit GEMM, ReLU and MaxPool2d as plain
// elementwise/window kernels, nn.Linear as a tiled shared-memory GEMM. At the benchmark's batch of
// 1024 the GEMMs are nearly all the time: each thread computes a TILE_T x TILE_T block of outputs
// from registers (one output a thread ran 11x cuDNN's time).

#define TILE_M 64        // output pixels (conv) or rows (linear) of a block
#define TILE_N 64        // output channels (conv) or columns (linear) of a block
#define TILE_K 16        // reduction slice staged in shared memory
#define TILE_T 4         // outputs a thread computes along M and along N
#define TILE_THREADS 16  // threads along M and along N: TILE_M / TILE_T
#define TILE_LOADS 4     // elements of each staged tile a thread loads: TILE_K * TILE_M / 256
#define TILE_KSTEP 4     // rows of As that one pass of the 256 threads fills: 256 / TILE_M

// Conv2d with bias (NCHW, groups = 1) as a tiled implicit GEMM:
// rows = output pixels m = (n, oh, ow), columns = output channels co,
// reduction index k = (ci, kh, kw) over K = C_in * KH * KW; weight is (C_out, K) row-major.
// Block (TILE_THREADS, TILE_THREADS): thread (tx, ty) computes pixels tx + 16 j, channels ty + 16 i.
extern "C" __global__ void conv2d_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ b, float* __restrict__ y, int N,
                                        int C_in, int H, int W, int C_out, int OH, int OW, int KH, int KW,
                                        int stride_h, int stride_w, int pad_h, int pad_w, int dil_h,
                                        int dil_w) {
    __shared__ float As[TILE_K][TILE_M];      // As[kk][pixel]
    __shared__ float Bs[TILE_K][TILE_N + 1];  // Bs[kk][channel]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int tid = ty * TILE_THREADS + tx;
    long long M = (long long)N * OH * OW;
    int KHW = KH * KW;
    int K = C_in * KHW;
    long long m0 = (long long)blockIdx.x * TILE_M;
    int co0 = blockIdx.y * TILE_N;
    // the pixel this thread loads into As at every stage, in rows ka0, ka0 + TILE_KSTEP, ...
    int pa = tid % TILE_M;
    int ka0 = tid / TILE_M;
    long long ma = m0 + pa;
    int ow = 0;
    int oh = 0;
    int n = 0;
    if (ma < M) {
        ow = (int)(ma % OW);
        oh = (int)((ma / OW) % OH);
        n = (int)(ma / ((long long)OW * OH));
    }
    int ih0 = oh * stride_h - pad_h;
    int iw0 = ow * stride_w - pad_w;
    const float* xn = x + (long long)n * C_in * H * W;
    // the reduction column this thread loads into Bs at every stage, for channels cb0, cb0 + 16, ...
    int kb = tid % TILE_K;
    int cb0 = tid / TILE_K;
    float acc[TILE_T][TILE_T];
    for (int j = 0; j < TILE_T; ++j) {
        for (int i = 0; i < TILE_T; ++i) {
            acc[j][i] = 0.0f;
        }
    }
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        for (int r = 0; r < TILE_LOADS; ++r) {
            int kk = ka0 + TILE_KSTEP * r;
            int ka = k0 + kk;
            float av = 0.0f;
            if (ma < M && ka < K) {
                int ci = ka / KHW;
                int q = ka % KHW;
                int ih = ih0 + (q / KW) * dil_h;
                int iw = iw0 + (q % KW) * dil_w;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                    av = xn[((long long)ci * H + ih) * W + iw];
                }
            }
            As[kk][pa] = av;
            int cb = cb0 + TILE_THREADS * r;
            int co = co0 + cb;
            Bs[kb][cb] = (co < C_out && k0 + kb < K) ? w[(long long)co * K + k0 + kb] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < TILE_K; ++kk) {
            float av[TILE_T];
            float bv[TILE_T];
            for (int j = 0; j < TILE_T; ++j) {
                av[j] = As[kk][tx + TILE_THREADS * j];
            }
            for (int i = 0; i < TILE_T; ++i) {
                bv[i] = Bs[kk][ty + TILE_THREADS * i];
            }
            for (int j = 0; j < TILE_T; ++j) {
                for (int i = 0; i < TILE_T; ++i) {
                    acc[j][i] += av[j] * bv[i];
                }
            }
        }
        __syncthreads();
    }
    for (int j = 0; j < TILE_T; ++j) {
        long long m = m0 + tx + TILE_THREADS * j;
        if (m < M) {
            int pw = (int)(m % OW);
            int ph = (int)((m / OW) % OH);
            int pn = (int)(m / ((long long)OW * OH));
            for (int i = 0; i < TILE_T; ++i) {
                int co = co0 + ty + TILE_THREADS * i;
                if (co < C_out) {
                    y[(((long long)pn * C_out + co) * OH + ph) * OW + pw] = acc[j][i] + b[co];
                }
            }
        }
    }
}

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
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

// nn.Linear: y = x W^T + b with x (M, K), W (N, K), y (M, N); a tiled shared-memory GEMM.
// Block (TILE_THREADS, TILE_THREADS): thread (tx, ty) computes rows ty + 16 j, columns tx + 16 i.
extern "C" __global__ void linear_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                          int K) {
    __shared__ float As[TILE_K][TILE_M + 1];  // As[kk][row]
    __shared__ float Bs[TILE_K][TILE_N + 1];  // Bs[kk][column]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int tid = ty * TILE_THREADS + tx;
    int row0 = blockIdx.y * TILE_M;
    int col0 = blockIdx.x * TILE_N;
    // the reduction column this thread loads at every stage, for rows (and weight rows) l0, l0 + 16, ...
    int kl = tid % TILE_K;
    int l0 = tid / TILE_K;
    float acc[TILE_T][TILE_T];
    for (int j = 0; j < TILE_T; ++j) {
        for (int i = 0; i < TILE_T; ++i) {
            acc[j][i] = 0.0f;
        }
    }
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        int kk = k0 + kl;
        for (int r = 0; r < TILE_LOADS; ++r) {
            int l = l0 + TILE_THREADS * r;
            As[kl][l] = (row0 + l < M && kk < K) ? x[(long long)(row0 + l) * K + kk] : 0.0f;
            Bs[kl][l] = (col0 + l < N && kk < K) ? w[(long long)(col0 + l) * K + kk] : 0.0f;
        }
        __syncthreads();
        for (int t = 0; t < TILE_K; ++t) {
            float av[TILE_T];
            float bv[TILE_T];
            for (int j = 0; j < TILE_T; ++j) {
                av[j] = As[t][ty + TILE_THREADS * j];
            }
            for (int i = 0; i < TILE_T; ++i) {
                bv[i] = Bs[t][tx + TILE_THREADS * i];
            }
            for (int j = 0; j < TILE_T; ++j) {
                for (int i = 0; i < TILE_T; ++i) {
                    acc[j][i] += av[j] * bv[i];
                }
            }
        }
        __syncthreads();
    }
    for (int j = 0; j < TILE_T; ++j) {
        int row = row0 + ty + TILE_THREADS * j;
        for (int i = 0; i < TILE_T; ++i) {
            int col = col0 + tx + TILE_THREADS * i;
            if (row < M && col < N) {
                y[(long long)row * N + col] = acc[j][i] + b[col];
            }
        }
    }
}
