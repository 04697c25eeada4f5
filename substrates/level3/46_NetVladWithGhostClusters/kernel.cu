// level3/46: NetVLAD with ghost clusters. x (B, N, D) is viewed as (BN, D) rows.
//   assignment = x @ clusters                  (BN, K+G)   tiled matmul
//   assignment = BatchNorm1d(assignment)       batch statistics over the BN rows in training mode
//   assignment = softmax over the K+G clusters, keeping the first K columns   (BN, K)
//   a_sum[b, k] = sum_n assignment[b, n, k]
//   vlad[b, d, k] = sum_n assignment[b, n, k] * x[b, n, d] - a_sum[b, k] * clusters2[d, k]
//   vlad = vlad / max(||vlad[b, :, k]||, eps)  (F.normalize over D)
//   out  = vlad / max(||vlad[b, :]||, eps)     (F.normalize of the flattened D*K row)
// Everything in fp32; reductions are shared-memory trees or tiled (blocked) sums.

#define TILE 16
#define RED_BLOCK 512
#define SM_BLOCK 64
#define NORM_BLOCK 256

// c (M, N) = a (M, K) @ b (K, N), all row-major. Block (TILE, TILE), one thread per output:
// threadIdx.y walks rows (blockIdx.x tiles the rows, which may be many), threadIdx.x columns.
extern "C" __global__ void matmul_nn(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ c, long long M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.x * TILE + ty;
    int col = blockIdx.y * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ka = t + tx;
        int kb = t + ty;
        As[ty][tx] = (row < M && ka < K) ? a[row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? b[(long long)kb * N + col] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += As[ty][i] * Bs[i][tx];
        }
        acc += part;
        __syncthreads();
    }
    if (row < M && col < N) {
        c[row * N + col] = acc;
    }
}

// BatchNorm1d batch statistics of y (rows, C): one block per column, mean then biased variance
// (two passes, fp32, each a strided per-thread sum folded by a shared-memory tree).
extern "C" __global__ void bn1d_stats(const float* __restrict__ y, float* __restrict__ mean,
                                      float* __restrict__ var, long long rows, int C) {
    __shared__ float sdata[RED_BLOCK];
    int tid = threadIdx.x;
    int c = blockIdx.x;
    float acc = 0.0f;
    for (long long r = tid; r < rows; r += blockDim.x) {
        acc += y[r * C + c];
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    float mu = sdata[0] / (float)rows;
    __syncthreads();
    float acc2 = 0.0f;
    for (long long r = tid; r < rows; r += blockDim.x) {
        float d = y[r * C + c] - mu;
        acc2 += d * d;
    }
    sdata[tid] = acc2;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        mean[c] = mu;
        var[c] = sdata[0] / (float)rows;
    }
}

// out = (y - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c], c the column of (rows, C)
extern "C" __global__ void bn1d_apply(const float* __restrict__ y, const float* __restrict__ mean,
                                      const float* __restrict__ var, const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ out, int C,
                                      long long total, float eps) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = (int)(i % C);
        out[i] = (y[i] - mean[c]) * rsqrtf(var[c] + eps) * gamma[c] + beta[c];
    }
}

// Softmax of each row of x (rows, cols) over its cols, written for the first keep columns only
// into out (rows, keep): the ghost clusters take part in the normaliser and are then dropped.
// One block per row: the row max (-INFINITY-seeded fmaxf tree), the sum of expf(x - max), output.
extern "C" __global__ void softmax_rows_head(const float* __restrict__ x, float* __restrict__ out,
                                             long long rows, int cols, int keep) {
    __shared__ float sdata[SM_BLOCK];
    long long r = blockIdx.x;
    const float* xr = x + r * cols;
    float m = -INFINITY;
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
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
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
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
        for (int j = threadIdx.x; j < keep; j += blockDim.x) {
            out[r * keep + j] = expf(xr[j] - rowmax) / sum;
        }
    }
}

// a_sum[b, k] = sum over n of assign[b, n, k], assign (B, N, K); one thread per (b, k).
extern "C" __global__ void sum_over_samples(const float* __restrict__ assign, float* __restrict__ a_sum,
                                            int N, int K, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int k = (int)(i % K);
        long long b = i / K;
        const float* ap = assign + b * N * K + k;
        float acc = 0.0f;
        for (int n = 0; n < N; ++n) {
            acc += ap[(long long)n * K];
        }
        a_sum[i] = acc;
    }
}

// vlad[b, d, k] = sum_n assign[b, n, k] * x[b, n, d] - a_sum[b, k] * c2[d, k]
// assign (B, N, K), x (B, N, D), c2 (D, K), vlad (B, D, K). A tiled batched matmul over n:
// block (TILE, TILE), threadIdx.x walks clusters k, threadIdx.y walks features d, blockIdx.z is b.
extern "C" __global__ void vlad_aggregate(const float* __restrict__ assign, const float* __restrict__ x,
                                          const float* __restrict__ a_sum, const float* __restrict__ c2,
                                          float* __restrict__ vlad, int N, int D, int K) {
    __shared__ float Xs[TILE][TILE + 1];  // Xs[nn][d]
    __shared__ float As[TILE][TILE];      // As[nn][k]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long b = blockIdx.z;
    int k = blockIdx.x * TILE + tx;
    int d = blockIdx.y * TILE + ty;
    int dl = blockIdx.y * TILE + tx;  // the feature this thread loads
    const float* ab = assign + b * N * K;
    const float* xb = x + b * N * D;
    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        int n = t + ty;
        Xs[ty][tx] = (n < N && dl < D) ? xb[(long long)n * D + dl] : 0.0f;
        As[ty][tx] = (n < N && k < K) ? ab[(long long)n * K + k] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += Xs[i][ty] * As[i][tx];
        }
        acc += part;
        __syncthreads();
    }
    if (d < D && k < K) {
        vlad[(b * D + d) * K + k] = acc - a_sum[b * K + k] * c2[(long long)d * K + k];
    }
}

// F.normalize along one dim: x viewed as (outer, len, inner); row r = o * inner + i holds the
// elements (o * len + j) * inner + i. out = x / max(sqrt(sum x^2), eps). One block per row.
extern "C" __global__ void l2_normalize_rows(const float* __restrict__ x, float* __restrict__ out,
                                             long long rows, int len, long long inner, float eps) {
    __shared__ float sdata[NORM_BLOCK];
    long long r = blockIdx.x;
    long long o = r / inner;
    long long i = r % inner;
    long long base = o * len * inner + i;
    float acc = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            float v = x[base + (long long)j * inner];
            acc += v * v;
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float denom = fmaxf(sqrtf(sdata[0]), eps);
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            long long idx = base + (long long)j * inner;
            out[idx] = x[idx] / denom;
        }
    }
}
