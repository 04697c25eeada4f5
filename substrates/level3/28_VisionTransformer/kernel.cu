// level3/28_VisionTransformer: ViT as the reference writes it,
//   P = img.unfold(2, p, p).unfold(3, p, p).reshape(B, NP, C*p*p)   (a gather, patch_rows)
//   X = cat(cls, P @ Wpe^T + bpe) + pos                               (B, NP + 1, D)
//   X = TransformerEncoder(X)            (post-norm layers, batch_first=False: the sequence axis
//                                         is the image axis B and the batch axis the tokens)
//   out = Linear2(gelu(Linear1(X[:, 0])))
// Each encoder layer (norm_first=False, dropout 0):
//   qkv = X @ in_proj_weight^T + in_proj_bias   (rows of 3D: q | k | v)
//   att = softmax((q . k) / sqrt(hd)) per (token n, head h) over the B images; y = att @ v
//   X1 = norm1(X + out_proj(y));  X = norm2(X1 + linear2(act(linear1(X1))))
// The attention kernels take the row of (sequence position l, batch n) as
// l * s_stride + n * b_stride, so the head split, the merge and the sequence-first layout are
// index arithmetic. Every matmul is a TILE x TILE shared-memory tiled product, one thread per
// output element, each tile's partial product summed separately (a blocked fp32 sum over the
// reduced axis); the attention matmuls are batched over batch x heads through grid z.
#define TILE 16
#define BLOCK 256

// The reference's unfold + reshape, as a gather: out (nb, NP, PD), NP = nph * npw, PD = C*p*p,
// is the (nb, C, nph, npw, p, p) unfold of img (nb, C, H, W) flattened in that order and cut
// into rows of PD: flat f = ((((c * nph + ph) * npw + pw) * p + i) * p + j) inside an image
// holds img[b, c, ph * p + i, pw * p + j].
extern "C" __global__ void unfold_patches(const float* __restrict__ img, float* __restrict__ out,
                                          int nb, int C, int H, int W, int p, int nph, int npw) {
    long long per = (long long)C * nph * npw * p * p;
    long long n = (long long)nb * per;
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        long long b = idx / per;
        long long f = idx % per;
        int j = (int)(f % p);
        int i = (int)((f / p) % p);
        int pw = (int)((f / ((long long)p * p)) % npw);
        int ph = (int)((f / ((long long)p * p * npw)) % nph);
        int c = (int)(f / ((long long)p * p * npw * nph));
        out[idx] = img[((b * C + c) * H + (long long)ph * p + i) * W + (long long)pw * p + j];
    }
}

// out[b, t, d] = (t == 0 ? cls[d] : emb[b, t - 1, d]) + pos[t, d]; emb (nb, NP, D),
// out (nb, NP + 1, D), pos (NP + 1, D)
extern "C" __global__ void embed_tokens(const float* __restrict__ cls, const float* __restrict__ emb,
                                        const float* __restrict__ pos, float* __restrict__ out,
                                        int nb, int NP, int D) {
    int T = NP + 1;
    long long n = (long long)nb * T * D;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int d = (int)(i % D);
        int t = (int)((i / D) % T);
        long long b = i / ((long long)T * D);
        float v = (t == 0) ? cls[d] : emb[(b * NP + (t - 1)) * D + d];
        out[i] = v + pos[(long long)t * D + d];
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
