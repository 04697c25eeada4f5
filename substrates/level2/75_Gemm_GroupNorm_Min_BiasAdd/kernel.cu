// Gemm -> GroupNorm -> min over dim 1 (keepdim) -> + bias of shape (1, F, 1, 1). The (B, 1) min
// broadcast against (1, F, 1, 1) gives a (1, F, B, 1) output: out[0, f, b, 0] = min[b] + bias[f].
#define TILE 16

// nn.Linear (y = x @ W^T + b, W is (N, K)): tiled shared-memory matmul, block (TILE, TILE), one
// thread per output element; each tile's partial product is summed separately, then added.
extern "C" __global__ void linear_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ b, float* __restrict__ out, int M, int N,
                                        int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of W
    int wrow = blockIdx.x * TILE + ty;  // the row of W this thread loads

    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int kk = t * TILE + tx;
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
        out[(long long)row * N + col] = acc + b[col];
    }
}

// GroupNorm statistics: one block per group of group_size contiguous elements (a (row, group)
// pair of the (rows, cols) matrix), 256 threads; two-pass mean and biased variance in fp32.
extern "C" __global__ void group_stats(const float* __restrict__ y, float* __restrict__ mean,
                                       float* __restrict__ rstd, int num_groups, long long group_size,
                                       float eps) {
    __shared__ float sdata[256];
    int gi = blockIdx.x;
    if (gi >= num_groups) return;  // whole block leaves together, so no barrier is skipped
    const float* yg = y + (long long)gi * group_size;

    float acc = 0.0f;
    for (long long j = threadIdx.x; j < group_size; j += blockDim.x) {
        acc += yg[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mu = sdata[0] / (float)group_size;
    __syncthreads();  // everyone has read the mean before sdata is reused

    float sq = 0.0f;
    for (long long j = threadIdx.x; j < group_size; j += blockDim.x) {
        float d = yg[j] - mu;
        sq += d * d;
    }
    sdata[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mean[gi] = mu;
        rstd[gi] = rsqrtf(sdata[0] / (float)group_size + eps);
    }
}

// Per row: min over columns of the group-normalised, affine values; one block per row, 256 threads.
extern "C" __global__ void groupnorm_row_min(const float* __restrict__ y, const float* __restrict__ mean,
                                             const float* __restrict__ rstd, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, float* __restrict__ rowmin,
                                             int rows, int cols, int groups) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together
    int cpg = cols / groups;
    const float* yr = y + (long long)row * cols;
    float m = INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        int g = row * groups + j / cpg;
        float z = (yr[j] - mean[g]) * rstd[g] * gamma[j] + beta[j];
        m = fminf(m, z);
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fminf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) rowmin[row] = sdata[0];
}

// out[f * rows + b] = rowmin[b] + bias[f]: the (1, F, B, 1) broadcast sum.
extern "C" __global__ void broadcast_bias_add(const float* __restrict__ rowmin,
                                              const float* __restrict__ bias, float* __restrict__ out,
                                              long long n, int rows) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = (int)(i % rows);
        long long f = i / rows;
        out[i] = rowmin[b] + bias[f];
    }
}
