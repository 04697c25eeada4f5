// level2/22: Linear -> * scale -> x + x -> clamp -> logsumexp over dim 1 -> x * mish(x).

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

// Mish(x) = x * tanh(softplus(x)), softplus with PyTorch's threshold of 20.
__device__ float mish(float v) {
    float sp = v > 20.0f ? v : log1pf(expf(v));
    return v * tanhf(sp);
}

// Per row: v = clamp(y * s + y * s, lo, hi); lse = max + log(sum exp(v - max)); out = lse * mish(lse).
// One block of 256 threads per row, max and sum reduced through shared memory.
extern "C" __global__ void scale_clamp_logsumexp_mish(
        const float* __restrict__ y, float* __restrict__ out, int M, int N, float scale_factor,
        float clamp_min, float clamp_max) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= M) return;
    const float* p = y + (long long)row * N;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        float v = p[j] * scale_factor;
        v = v + v;
        v = fminf(fmaxf(v, clamp_min), clamp_max);
        mx = fmaxf(mx, v);
    }
    sdata[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    float rmax = sdata[0];
    __syncthreads();
    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        float v = p[j] * scale_factor;
        v = v + v;
        v = fminf(fmaxf(v, clamp_min), clamp_max);
        acc += expf(v - rmax);
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float lse = rmax + logf(sdata[0]);
        out[row] = lse * mish(lse);
    }
}
