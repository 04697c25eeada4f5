// nn.Linear (y = x @ W^T + b, W is (N, K)) as a tiled shared-memory matmul, block (TILE, TILE),
// one thread per output element; each tile's partial product is summed separately, then added.
// Epilogue: swish, / 2, clamp to [-1, 1], tanh, clamp to [-1, 1].
#define TILE 16

extern "C" __global__ void linear_swish_div_clamp_tanh_clamp(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        float* __restrict__ out, int M, int N, int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of W
    int wrow = blockIdx.x * TILE + ty;  // the row of W this thread loads

    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int kk = t * TILE + tx;
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
        float v = acc + b[col];
        v = v * (1.0f / (1.0f + expf(-v)));
        v = v / 2.0f;
        v = fminf(fmaxf(v, -1.0f), 1.0f);
        v = tanhf(v);
        v = fminf(fmaxf(v, -1.0f), 1.0f);
        out[(long long)row * N + col] = v;
    }
}
