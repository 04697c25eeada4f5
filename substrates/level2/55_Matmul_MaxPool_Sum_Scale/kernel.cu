// nn.Linear (tiled shared-memory GEMM), then per row: MaxPool1d over the features, sum of the
// pooled values (one block per row, shared-memory tree) and * scale_factor.

#define TILE 32

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

// one block per row: max over each pooling window (padding reads as -inf), sum of the maxima
extern "C" __global__ void row_maxpool_sum_scale(
        const float* __restrict__ y, float* __restrict__ out, int L, int P, int ksize, int stride, int pad,
        int dil, float scale_factor) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    long long row = blockIdx.x;
    const float* p = y + row * L;
    float acc = 0.0f;
    for (int o = tid; o < P; o += blockDim.x) {
        float m = -INFINITY;
        for (int t = 0; t < ksize; ++t) {
            int j = o * stride - pad + t * dil;
            if (j >= 0 && j < L) {
                float v = p[j];
                if (v > m || isnan(v)) m = v;
            }
        }
        acc += m;
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        out[row] = sdata[0] * scale_factor;
    }
}
