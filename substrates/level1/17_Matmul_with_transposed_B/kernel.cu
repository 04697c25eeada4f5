// C = A @ B^T with A (M, K) and B stored (N, K): C[m, n] = sum_k A[m, k] * B[n, k].
// Tiled shared-memory matmul. The B tile is loaded with consecutive threads on consecutive k
// (coalesced) and kept n-major: Bs[n][k], padded so the column reads avoid bank conflicts.
#define TILE 32

extern "C" __global__ void matmul_nt(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tilesN = (N + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int tileRow = tile / tilesN;
    int tileCol = tile % tilesN;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    int bn = tileCol * TILE + threadIdx.y;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int k = t + threadIdx.x;
        As[threadIdx.y][threadIdx.x] = (row < M && k < K) ? A[(long long)row * K + k] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bn < N && k < K) ? B[(long long)bn * K + k] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[threadIdx.y][kk] * Bs[threadIdx.x][kk];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
