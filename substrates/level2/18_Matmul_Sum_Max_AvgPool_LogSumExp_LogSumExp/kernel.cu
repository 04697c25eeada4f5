// level2/18: Linear -> sum over dim 1 -> max / mean / logsumexp / logsumexp over the (size-1) dim 1.

#define TILE 16

// nn.Linear: y = x @ W^T + b, x (M, K), W (N, K), b (N), y (M, N).
// Shared-memory tiled: each 16x16 block computes a 16x16 tile of y; grid (cdiv(N,16), cdiv(M,16)).
extern "C" __global__ void linear_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                          int K) {
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
        y[(long long)row * N + col] = acc + b[col];
    }
}

// Row sum of the linear output (one block of 256 threads per row), then the reference's chain of
// reductions over a dim of size one: max, mean, logsumexp, logsumexp.
extern "C" __global__ void row_sum_tail(const float* __restrict__ y, float* __restrict__ out, int M, int N) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= M) return;
    const float* p = y + (long long)row * N;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        acc += p[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float v = sdata[0];
        float m = fmaxf(-INFINITY, v);          // max over one element
        v = m / 1.0f;                           // mean over one element
        m = v;
        v = m + logf(expf(v - m));              // logsumexp over one element
        m = v;
        v = m + logf(expf(v - m));              // logsumexp over one element
        out[row] = v;
    }
}
