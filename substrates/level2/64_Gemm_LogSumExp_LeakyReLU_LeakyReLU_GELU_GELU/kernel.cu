// nn.Linear (tiled shared-memory GEMM), then per row: LogSumExp over features (one block per
// row, max subtracted, shared-memory trees), LeakyReLU twice and GELU (erf form) twice.

#define TILE 32

extern "C" __global__ void linear(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ b, float* __restrict__ y,
                                  int M, int N, int K, int has_bias) {
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
        float v = acc;
        if (has_bias) v += b[col];
        y[(long long)row * N + col] = v;
    }
}

extern "C" __global__ void row_lse_leaky2_gelu2(const float* __restrict__ y, float* __restrict__ out, int cols) {
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
        float v = rmax + logf(sdata[0]);
        v = v > 0.0f ? v : v * 0.01f;
        v = v > 0.0f ? v : v * 0.01f;
        v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        out[row] = v;
    }
}
