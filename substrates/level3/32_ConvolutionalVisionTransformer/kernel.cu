// level3/32_ConvolutionalVisionTransformer: CViT as the reference writes it,
//   F = conv1(x)                         (patch conv, kernel = stride = p, with bias)
//   e = flatten(F) @ Wproj^T + bproj     (B, D)
//   X = cat(cls, e)                      (B, 2, D)
//   X = layer(X) for each TransformerEncoderLayer (post-norm, batch_first=True, dropout 0)
//   out = X[:, 0] @ Wfc^T + bfc
// Each encoder layer:
//   qkv = X @ in_proj_weight^T + in_proj_bias   (rows of 3D: q | k | v)
//   att = softmax((q . k) / sqrt(hd)) per (batch n, head h) over the tokens; y = att @ v
//   X1 = norm1(X + out_proj(y));  X = norm2(X1 + linear2(act(linear1(X1))))
// The attention kernels take the row of (sequence position l, batch n) as
// l * s_stride + n * b_stride, so the head split and merge are index arithmetic. Every matmul
// (the conv as an implicit GEMM) is a TILE x TILE shared-memory tiled product, one thread per
// output element, each tile's partial product summed separately (a blocked fp32 sum over the
// reduced axis); the attention matmuls are batched over batch x heads through grid z.
#define TILE 16
#define BLOCK 256

// Conv2d with bias (NCHW, groups = 1) as a tiled implicit GEMM:
// rows = output pixels m = (n, oh, ow), columns = output channels co,
// reduction index k = (ci, kh, kw) over K = C_in * KH * KW; weight is (C_out, K) row-major.
// Block (TILE, TILE): threadIdx.x walks pixels, threadIdx.y walks channels.
extern "C" __global__ void conv2d_bias_igemm(const float* __restrict__ x, const float* __restrict__ w,
                                             const float* __restrict__ bias, float* __restrict__ y,
                                             int N, int C_in, int H, int W, int C_out, int OH, int OW,
                                             int KH, int KW, int stride_h, int stride_w, int pad_h,
                                             int pad_w, int dil_h, int dil_w) {
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
        float part = 0.0f;
        for (int kk = 0; kk < TILE; ++kk) {
            part += As[kk][tx] * Bs[kk][ty];
        }
        acc += part;
        __syncthreads();
    }
    if (m < M && co < C_out) {
        y[(((long long)n * C_out + co) * OH + oh) * OW + ow] = acc + bias[co];
    }
}

// out[b, 0, d] = cls[d], out[b, 1 + t, d] = x[b, t, d]; x (nb, NT, D), out (nb, NT + 1, D)
extern "C" __global__ void cat_cls_token(const float* __restrict__ cls, const float* __restrict__ x,
                                         float* __restrict__ out, int nb, int NT, int D) {
    int T = NT + 1;
    long long n = (long long)nb * T * D;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int d = (int)(i % D);
        int t = (int)((i / D) % T);
        long long b = i / ((long long)T * D);
        out[i] = (t == 0) ? cls[d] : x[(b * NT + (t - 1)) * D + d];
    }
}

__device__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
}

// out = act(x @ w^T + b); x (M, K), w (N, K), b (N), out (M, N);
// act 0: none, 1: relu, 2: gelu (exact, erf form, as nn.GELU() and F.gelu)
extern "C" __global__ void linear_bias_act(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ out,
                                           int M, int N, int K, int act) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of w
    int wrow = blockIdx.x * TILE + ty;  // the row of w this thread loads

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
        if (act == 1) {
            v = fmaxf(v, 0.0f);
        } else if (act == 2) {
            v = gelu_erf(v);
        }
        out[(long long)row * N + col] = v;
    }
}

// out = res + x @ w^T + b; x (M, K), w (N, K), b (N), res and out (M, N)
extern "C" __global__ void linear_bias_residual(const float* __restrict__ x, const float* __restrict__ w,
                                                const float* __restrict__ b, const float* __restrict__ res,
                                                float* __restrict__ out, int M, int N, int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of w
    int wrow = blockIdx.x * TILE + ty;  // the row of w this thread loads

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
        long long o = (long long)row * N + col;
        out[o] = res[o] + (acc + b[col]);
    }
}

// att[z, i, j] = (sum_d q[row(i, n), h*hd + d] * k[row(j, n), E + h*hd + d]) * scale with
// z = n * nh + h and row(l, n) = l * s_stride + n * b_stride, q and k read from qkv (rows of 3E).
// att is (nb * nh, L, L). grid (cdiv(L, TILE), cdiv(L, TILE), nb * nh), block (TILE, TILE).
extern "C" __global__ void attn_scores(const float* __restrict__ qkv, float* __restrict__ att,
                                       int L, int E, int nh, int hd, int s_stride, int b_stride,
                                       float scale) {
    __shared__ float qs[TILE][TILE];
    __shared__ float ks[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int n = z / nh;
    int h = z % nh;
    int i = blockIdx.y * TILE + ty;     // query position
    int j = blockIdx.x * TILE + tx;     // key position
    int krow = blockIdx.x * TILE + ty;  // the key position this thread loads
    long long row3 = 3LL * E;
    const float* base = qkv + (long long)n * b_stride * row3 + (long long)h * hd;

    float acc = 0.0f;
    for (int t = 0; t < hd; t += TILE) {
        int d = t + tx;
        qs[ty][tx] = (i < L && d < hd) ? base[(long long)i * s_stride * row3 + d] : 0.0f;
        ks[ty][tx] = (krow < L && d < hd) ? base[(long long)krow * s_stride * row3 + E + d] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int m = 0; m < TILE; ++m) {
            part += qs[ty][m] * ks[tx][m];
        }
        acc += part;
        __syncthreads();
    }
    if (i < L && j < L) {
        att[((long long)z * L + i) * L + j] = acc * scale;
    }
}

// softmax of each contiguous row of length len, in place: exp(x - max) / sum(exp(x - max)).
// One block per row; a -INFINITY-seeded fmaxf tree for the max, a shared-memory tree for the sum.
extern "C" __global__ void softmax_rows(float* __restrict__ x, long long rows, int len) {
    __shared__ float sdata[BLOCK];
    long long r = blockIdx.x;
    float* row = x + r * len;
    float m = -INFINITY;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            m = fmaxf(m, row[j]);
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
            acc += expf(row[j] - rowmax);
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
            row[j] = expf(row[j] - rowmax) / sum;
        }
    }
}

// y[row(i, n), h*hd + d] = sum_j att[z, i, j] * v[row(j, n), 2E + h*hd + d] with z = n * nh + h
// and row(l, n) = l * s_stride + n * b_stride; v read from qkv (rows of 3E), y has rows of E.
// grid (cdiv(hd, TILE), cdiv(L, TILE), nb * nh), block (TILE, TILE).
extern "C" __global__ void attn_values(const float* __restrict__ att, const float* __restrict__ qkv,
                                       float* __restrict__ y, int L, int E, int nh, int hd,
                                       int s_stride, int b_stride) {
    __shared__ float as[TILE][TILE];
    __shared__ float vs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int n = z / nh;
    int h = z % nh;
    int i = blockIdx.y * TILE + ty;  // query position
    int d = blockIdx.x * TILE + tx;  // channel inside the head
    long long row3 = 3LL * E;
    const float* arow = att + (long long)z * L * L;
    const float* vbase = qkv + (long long)n * b_stride * row3 + 2LL * E + (long long)h * hd;

    float acc = 0.0f;
    for (int t = 0; t < L; t += TILE) {
        int ja = t + tx;  // key position of the att element this thread loads
        int jv = t + ty;  // key position of the v element this thread loads
        as[ty][tx] = (i < L && ja < L) ? arow[(long long)i * L + ja] : 0.0f;
        vs[ty][tx] = (jv < L && d < hd) ? vbase[(long long)jv * s_stride * row3 + d] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int m = 0; m < TILE; ++m) {
            part += as[ty][m] * vs[m][tx];
        }
        acc += part;
        __syncthreads();
    }
    if (i < L && d < hd) {
        long long orow = (long long)i * s_stride + (long long)n * b_stride;
        y[orow * E + (long long)h * hd + d] = acc;
    }
}

// y = (x - mean) * rsqrt(var + eps) * weight + bias over each contiguous row of cols elements
// (biased variance, two passes in fp32). One block per row.
extern "C" __global__ void layer_norm_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ y,
                                           long long rows, int cols, float eps) {
    __shared__ float sdata[BLOCK];
    long long r = blockIdx.x;
    const float* row = x + r * cols;
    float acc = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
            acc += row[j];
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mean = sdata[0] / (float)cols;
    __syncthreads();
    float sq = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
            float d = row[j] - mean;
            sq += d * d;
        }
    }
    sdata[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float invstd = rsqrtf(sdata[0] / (float)cols + eps);
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
            y[r * cols + j] = (row[j] - mean) * invstd * weight[j] + bias[j];
        }
    }
}

// out[b, d] = x[b, t, d]; x (nb, T, D), out (nb, D): the token the head reads
extern "C" __global__ void take_token(const float* __restrict__ x, float* __restrict__ out,
                                      int nb, int T, int D, int t) {
    long long n = (long long)nb * D;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int d = (int)(i % D);
        long long b = i / D;
        out[i] = x[(b * T + t) * D + d];
    }
}
