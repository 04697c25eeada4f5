// nn.Linear (tiled GEMM), BatchNorm1d in training mode (per-feature batch mean and biased
// variance via column reductions), then GELU (erf form) and ReLU in the normalisation pass.

#define TILE 32
#define RED 32

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

// block (RED, RED): threadIdx.x picks a column, threadIdx.y strides the rows; tree over y
extern "C" __global__ void bn_col_stats(const float* __restrict__ y, float* __restrict__ mean,
                                        float* __restrict__ rstd, int M, int N, float eps) {
    __shared__ float sdata[RED][RED + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int col = blockIdx.x * RED + tx;

    float acc = 0.0f;
    if (col < N) {
        for (int r = ty; r < M; r += blockDim.y) {
            acc += y[(long long)r * N + col];
        }
    }
    sdata[ty][tx] = acc;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (ty < s) sdata[ty][tx] += sdata[ty + s][tx];
        __syncthreads();
    }
    float mu = sdata[0][tx] / (float)M;
    __syncthreads();

    float acc2 = 0.0f;
    if (col < N) {
        for (int r = ty; r < M; r += blockDim.y) {
            float d = y[(long long)r * N + col] - mu;
            acc2 += d * d;
        }
    }
    sdata[ty][tx] = acc2;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (ty < s) sdata[ty][tx] += sdata[ty + s][tx];
        __syncthreads();
    }
    if (ty == 0 && col < N) {
        float var = sdata[0][tx] / (float)M;
        mean[col] = mu;
        rstd[col] = rsqrtf(var + eps);
    }
}

extern "C" __global__ void bn_gelu_relu(const float* __restrict__ y, const float* __restrict__ mean,
                                        const float* __restrict__ rstd, const float* __restrict__ gamma,
                                        const float* __restrict__ beta, float* __restrict__ out, int N,
                                        long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = (int)(i % N);
        float v = (y[i] - mean[c]) * rstd[c] * gamma[c] + beta[c];
        v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        out[i] = v > 0.0f ? v : 0.0f;
    }
}
