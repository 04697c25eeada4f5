// C = A^T @ B^T with A stored (K, M) and B stored (N, K): C[m, n] = sum_k A[k, m] * B[n, k].
// Tiled shared-memory matmul. Both tiles are loaded coalesced: As[k][m] (consecutive threads on m)
// and Bs[n][k] (consecutive threads on k), padded so the column reads avoid bank conflicts.
#define TILE 32

extern "C" __global__ void matmul_tt(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tilesN = (N + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int tileRow = tile / tilesN;
    int tileCol = tile % tilesN;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    int am = tileRow * TILE + threadIdx.x;
    int bn = tileCol * TILE + threadIdx.y;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.y;
        int bk = t + threadIdx.x;
        As[threadIdx.y][threadIdx.x] = (ak < K && am < M) ? A[(long long)ak * M + am] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bn < N && bk < K) ? B[(long long)bn * K + bk] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[kk][threadIdx.y] * Bs[threadIdx.x][kk];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
