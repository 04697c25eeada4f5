// level2/33: Linear -> * scale (per feature) -> BatchNorm1d (training: batch statistics).

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

// Per-feature scale of the (M, C) linear output.
extern "C" __global__ void scale_features(const float* __restrict__ y, const float* __restrict__ scale,
                                          float* __restrict__ out, long long n, int C) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = y[i] * scale[i % C];
    }
}

// BatchNorm (training mode) batch statistics for channel c over (N, spatial): two-pass mean and
// biased variance in fp32; one block of 256 threads per channel. Writes mean[c] and
// rstd[c] = 1 / sqrt(var + eps).
extern "C" __global__ void batch_norm_stats(const float* __restrict__ y, float* __restrict__ mean,
                                            float* __restrict__ rstd, int N, int C, long long S, float eps) {
    __shared__ float sdata[256];
    int c = blockIdx.x;
    if (c >= C) return;
    long long count = (long long)N * S;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
        long long n = j / S;
        long long s = j % S;
        acc += y[(n * C + c) * S + s];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float m = sdata[0] / count;
    __syncthreads();
    float vacc = 0.0f;
    for (long long j = threadIdx.x; j < count; j += blockDim.x) {
        long long n = j / S;
        long long s = j % S;
        float d = y[(n * C + c) * S + s] - m;
        vacc += d * d;
    }
    sdata[threadIdx.x] = vacc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mean[c] = m;
        rstd[c] = rsqrtf(sdata[0] / count + eps);
    }
}

// Apply the batch statistics and the BatchNorm affine parameters.
extern "C" __global__ void batch_norm_apply(const float* __restrict__ y, const float* __restrict__ mean,
                                            const float* __restrict__ rstd, const float* __restrict__ gamma,
                                            const float* __restrict__ beta, float* __restrict__ out,
                                            long long n, int C, long long S) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = (int)((i / S) % C);
        out[i] = (y[i] - mean[c]) * rstd[c] * gamma[c] + beta[c];
    }
}
