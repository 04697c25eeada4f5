// level3/3_DeepNarrowMLP: an MLP, nn.Sequential of Linear layers with a ReLU after each hidden one.
// Each Linear is y = x @ W^T + b with x (M, K), W (N, K), b (N): a tiled shared-memory matmul,
// block (TILE, TILE), one thread per output element; each tile's partial product is summed
// separately (a blocked fp32 sum over K). The ReLU that follows a Linear is fused into its
// epilogue when apply_relu is set.
#define TILE 16

extern "C" __global__ void linear_bias_act(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ out, int M,
                                           int N, int K, int apply_relu) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of W
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
        float v = acc + b[col];
        if (apply_relu) {
            v = fmaxf(v, 0.0f);
        }
        out[(long long)row * N + col] = v;
    }
}
