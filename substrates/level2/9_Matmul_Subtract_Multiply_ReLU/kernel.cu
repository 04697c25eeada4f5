// level2/9: Linear -> - subtract_value -> * multiply_value -> ReLU.

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

// (v - subtract_value) * multiply_value, then ReLU.
extern "C" __global__ void sub_mul_relu(const float* __restrict__ y, float* __restrict__ out, long long n,
                                        float subtract_value, float multiply_value) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = (y[i] - subtract_value) * multiply_value;
        out[i] = fmaxf(v, 0.0f);
    }
}
