// Gemm -> exact GELU -> softmax over dim 1.
#define TILE 16

// nn.Linear (y = x @ W^T + b, W is (N, K)) with the GELU fused: tiled shared-memory matmul,
// block (TILE, TILE), one thread per output element; each tile's partial product is summed
// separately, then added.
extern "C" __global__ void linear_gelu(const float* __restrict__ x, const float* __restrict__ w,
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
        float v = acc + b[col];
        out[(long long)row * N + col] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}

// Row softmax: one block per row, 256 threads; max-subtracted exponentials, fp32 sums.
extern "C" __global__ void softmax_rows(const float* __restrict__ y, float* __restrict__ out, int rows,
                                        int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* yr = y + (long long)row * cols;
    float* outr = out + (long long)row * cols;

    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        m = fmaxf(m, yr[j]);
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
        acc += expf(yr[j] - row_max);
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float total = sdata[0];

    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        outr[j] = expf(yr[j] - row_max) / total;
    }
}
