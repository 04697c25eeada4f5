// nn.Linear (tiled GEMM) with fused - subtract, then per row: mean over features,
// LogSumExp over the single remaining value, GELU (erf form); finally + the original input.

#define TILE 32

extern "C" __global__ void linear_subtract(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, const float* __restrict__ sub,
                                           float* __restrict__ y, int M, int N, int K, int has_bias) {
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
        y[(long long)row * N + col] = v - sub[col];
    }
}

// one block per row: mean over cols, logsumexp over that one value, GELU
extern "C" __global__ void row_mean_lse_gelu(const float* __restrict__ y, float* __restrict__ g, int cols) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    long long row = blockIdx.x;
    const float* p = y + row * cols;
    float acc = 0.0f;
    for (int j = tid; j < cols; j += blockDim.x) {
        acc += p[j];
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        float m = sdata[0] / (float)cols;
        // logsumexp over a dimension of size 1
        float mx = m;
        float se = expf(m - mx);
        float v = mx + logf(se);
        g[row] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

extern "C" __global__ void residual_add(const float* __restrict__ g, const float* __restrict__ x,
                                        float* __restrict__ out, int cols, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long row = i / cols;
        out[i] = g[row] + x[i];
    }
}
