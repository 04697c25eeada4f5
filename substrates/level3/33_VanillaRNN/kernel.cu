// level3/33: one Vanilla RNN cell step.
//   combined = cat(x, h0, dim=1)            (concat_cols)
//   hidden   = tanh(combined @ W_i2h^T + b)  (linear_tanh)
//   out      = hidden @ W_h2o^T + b          (linear_forward)
#define TILE 16

// out[r, :] = [a[r, :], b[r, :]] with a (rows, ca), b (rows, cb), out (rows, ca + cb).
extern "C" __global__ void concat_cols(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ out, int rows, int ca, int cb) {
    long long cols = (long long)ca + cb;
    long long n = (long long)rows * cols;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long r = i / cols;
        long long c = i % cols;
        out[i] = c < ca ? a[r * ca + c] : b[r * cb + (c - ca)];
    }
}

// nn.Linear then tanh: y = tanh(x @ W^T + b), x (M, K), W (N, K), b (N), y (M, N).
// Shared-memory tiled: each 16x16 block computes a 16x16 tile of y; grid (cdiv(N,16), cdiv(M,16)).
extern "C" __global__ void linear_tanh(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                       int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and y
    int col = blockIdx.x * TILE + tx;   // column of y = row of W
    int wrow = blockIdx.x * TILE + ty;  // the row of W this thread loads
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int kk = t + tx;
        xs[ty][tx] = (row < M && kk < K) ? x[(long long)row * K + kk] : 0.0f;
        ws[ty][tx] = (wrow < N && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += xs[ty][i] * ws[tx][i];
        }
        acc += part;
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (row < M && col < N) {
        y[(long long)row * N + col] = tanhf(acc + b[col]);
    }
}

// nn.Linear: y = x @ W^T + b, same tiling as linear_tanh.
extern "C" __global__ void linear_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                          int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int wrow = blockIdx.x * TILE + ty;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int kk = t + tx;
        xs[ty][tx] = (row < M && kk < K) ? x[(long long)row * K + kk] : 0.0f;
        ws[ty][tx] = (wrow < N && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += xs[ty][i] * ws[tx][i];
        }
        acc += part;
        __syncthreads();
    }
    if (row < M && col < N) {
        y[(long long)row * N + col] = acc + b[col];
    }
}
