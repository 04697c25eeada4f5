// level2/14: x @ W^T (no bias) -> / 2 -> sum over dim 1 (keepdim) -> * scaling_factor.

#define TILE 16

// y = x @ W^T, x (M, K), W (N, K), y (M, N); shared-memory tiled, grid (cdiv(N,16), cdiv(M,16)).
extern "C" __global__ void matmul_xwt(const float* __restrict__ x, const float* __restrict__ w,
                                      float* __restrict__ y, int M, int N, int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    int wrow = blockIdx.x * TILE + threadIdx.y;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int k = t + threadIdx.x;
        xs[threadIdx.y][threadIdx.x] = (row < M && k < K) ? x[(long long)row * K + k] : 0.0f;
        ws[threadIdx.y][threadIdx.x] = (wrow < N && k < K) ? w[(long long)wrow * K + k] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; kk++) {
            acc += xs[threadIdx.y][kk] * ws[threadIdx.x][kk];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        y[(long long)row * N + col] = acc;
    }
}

// Row sum of y / 2, times the scaling factor: one block of 256 threads per row.
extern "C" __global__ void row_sum_div_scale(const float* __restrict__ y, float* __restrict__ out, int M,
                                             int N, float scaling_factor) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= M) return;
    const float* p = y + (long long)row * N;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        acc += p[j] / 2.0f;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[row] = sdata[0] * scaling_factor;
    }
}
