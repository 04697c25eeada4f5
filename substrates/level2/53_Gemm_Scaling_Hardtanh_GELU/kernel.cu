// nn.Linear (tiled shared-memory GEMM) with the fused epilogue
// GELU(hardtanh(y * scaling_factor, min_val, max_val)), GELU in the erf form.

#define TILE 32

extern "C" __global__ void linear_scale_hardtanh_gelu(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        float* __restrict__ out, int M, int N, int K, float scaling_factor, float min_val, float max_val) {
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
        v = v * scaling_factor;
        v = fminf(fmaxf(v, min_val), max_val);
        out[(long long)row * N + col] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
