// nn.Linear + Sigmoid (tiled GEMM, fused epilogue), nn.Linear (tiled GEMM), then LogSumExp
// over features: one block per row, max subtracted, shared-memory tree reductions.

#define TILE 32

extern "C" __global__ void linear_sigmoid(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                          int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int wrow = blockIdx.x * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int kk = k0 + tx;
        As[ty][tx] = (row < M && kk < K) ? x[(long long)row * K + kk] : 0.0f;
        Bs[tx][ty] = (wrow < N && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) {
            acc += As[ty][t] * Bs[t][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        float v = acc + b[col];
        y[(long long)row * N + col] = 1.0f / (1.0f + expf(-v));
    }
}

extern "C" __global__ void linear(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ b, float* __restrict__ y, int M, int N, int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int wrow = blockIdx.x * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int kk = k0 + tx;
        As[ty][tx] = (row < M && kk < K) ? x[(long long)row * K + kk] : 0.0f;
        Bs[tx][ty] = (wrow < N && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) {
            acc += As[ty][t] * Bs[t][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        y[(long long)row * N + col] = acc + b[col];
    }
}

extern "C" __global__ void row_logsumexp(const float* __restrict__ y, float* __restrict__ out, int cols) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    long long row = blockIdx.x;
    const float* p = y + row * cols;

    float m = -INFINITY;
    for (int j = tid; j < cols; j += blockDim.x) {
        m = fmaxf(m, p[j]);
    }
    sdata[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmaxf(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    float rmax = sdata[0];
    __syncthreads();

    float acc = 0.0f;
    for (int j = tid; j < cols; j += blockDim.x) {
        acc += expf(p[j] - rmax);
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        out[row] = rmax + logf(sdata[0]);
    }
}
