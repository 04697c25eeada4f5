// C = A^T @ B with A stored (K, M) and B (K, N): C[m, n] = sum_k A[k, m] * B[k, n].
// Tiled shared-memory matmul. The A tile is loaded with consecutive threads on consecutive m
// (coalesced) and kept k-major: As[k][m].
#define TILE 32

extern "C" __global__ void matmul_tn(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE];
    int tilesN = (N + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int tileRow = tile / tilesN;
    int tileCol = tile % tilesN;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    int am = tileRow * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int k = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (k < K && am < M) ? A[(long long)k * M + am] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (k < K && col < N) ? B[(long long)k * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[kk][threadIdx.y] * Bs[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
