// Gemm -> max over max_dim (keepdim) -> subtract the mean over dim 1 -> exact GELU.
// With max_dim = 1 the max leaves one column, its mean is itself, so the output is GELU(0) = 0
// for every row (a constant output, computed the long way all the same).
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

// Max over the middle axis of y viewed as (outer, red, inner); one block per (outer, inner)
// output, block size 256. max_dim = 1 of an (M, N) matrix is (M, N, 1); max_dim = 0 is (1, M, N).
extern "C" __global__ void max_axis(const float* __restrict__ y, float* __restrict__ out, int outer, int red,
                                    int inner) {
    __shared__ float sdata[256];
    int o = blockIdx.x / inner;
    int in = blockIdx.x % inner;
    if (o >= outer) return;  // whole block leaves together, so no barrier is skipped
    float m = -INFINITY;
    for (int r = threadIdx.x; r < red; r += blockDim.x) {
        m = fmaxf(m, y[((long long)o * red + r) * inner + in]);
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sdata[0];
}

// out[r, c] = GELU(v[r, c] - mean_c v[r, :]) for a (rows, cols) matrix; one block per row, 256 threads.
extern "C" __global__ void sub_row_mean_gelu(const float* __restrict__ v, float* __restrict__ out, int rows,
                                             int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together
    const float* vr = v + (long long)row * cols;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        acc += vr[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mean = sdata[0] / cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = vr[j] - mean;
        out[(long long)row * cols + j] = 0.5f * d * (1.0f + erff(d * 0.70710678f));
    }
}
