// Matmul of symmetric matrices (symmetry not assumed: the normal redraw is not symmetric): C = A @ B with A (M, K) and B (K, N) row-major.
// Tiled shared-memory matmul, one output per thread, flat 1-D grid over output tiles.
#define TILE 32

extern "C" __global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tilesN = (N + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int tileRow = tile / tilesN;
    int tileCol = tile % tilesN;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.x;
        int bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[(long long)row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[(long long)bk * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
