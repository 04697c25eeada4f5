// Gemm -> BatchNorm1d (training mode: batch statistics, biased variance) -> * scale[0] -> softmax(dim=1).
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

// BatchNorm1d training statistics of a (rows, cols) matrix: per column, the batch mean and
// rstd = 1 / sqrt(biased variance + eps), two-pass in fp32. Block (COLS, ROWS): COLS adjacent
// columns (coalesced loads), ROWS threads down each column, combined by a tree over threadIdx.y.
#define COLS 32
#define ROWS 8

extern "C" __global__ void col_mean_rstd(const float* __restrict__ y, float* __restrict__ mean,
                                         float* __restrict__ rstd, int rows, int cols, float eps) {
    __shared__ float sdata[ROWS][COLS];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int col = blockIdx.x * COLS + tx;

    float acc = 0.0f;
    for (int r = ty; r < rows; r += blockDim.y) {
        acc += (col < cols) ? y[(long long)r * cols + col] : 0.0f;
    }
    sdata[ty][tx] = acc;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (ty < s) sdata[ty][tx] += sdata[ty + s][tx];
        __syncthreads();
    }
    float mu = sdata[0][tx] / rows;
    __syncthreads();  // everyone has read the mean before sdata is reused

    float sq = 0.0f;
    for (int r = ty; r < rows; r += blockDim.y) {
        float d = (col < cols) ? y[(long long)r * cols + col] - mu : 0.0f;
        sq += d * d;
    }
    sdata[ty][tx] = sq;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (ty < s) sdata[ty][tx] += sdata[ty + s][tx];
        __syncthreads();
    }
    if (ty == 0 && col < cols) {
        mean[col] = mu;
        rstd[col] = rsqrtf(sdata[0][tx] / rows + eps);
    }
}

// Row softmax of z = ((y - mean) * rstd * gamma + beta) * scale[0]; one block per row, 256 threads.
extern "C" __global__ void bn_scale_softmax(const float* __restrict__ y, const float* __restrict__ mean,
                                            const float* __restrict__ rstd, const float* __restrict__ gamma,
                                            const float* __restrict__ beta, const float* __restrict__ scale,
                                            float* __restrict__ out, int rows, int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* yr = y + (long long)row * cols;
    float* outr = out + (long long)row * cols;
    float sc = scale[0];

    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float z = ((yr[j] - mean[j]) * rstd[j] * gamma[j] + beta[j]) * sc;
        m = fmaxf(m, z);
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    float row_max = sdata[0];
    __syncthreads();  // everyone has read the max before sdata is reused

    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float z = ((yr[j] - mean[j]) * rstd[j] * gamma[j] + beta[j]) * sc;
        acc += expf(z - row_max);
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float total = sdata[0];

    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float z = ((yr[j] - mean[j]) * rstd[j] * gamma[j] + beta[j]) * sc;
        outr[j] = expf(z - row_max) / total;
    }
}
