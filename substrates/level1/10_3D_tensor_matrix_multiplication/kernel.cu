// 3-D tensor times matrix: C[n] = A[n] @ B, A (NB, M, K), B (K, L) shared by every batch, C (NB, M, L).
// Tiled shared-memory matmul; a flat 1-D grid over (batch, tile row, tile column).
#define TILE 32

extern "C" __global__ void tensor3_matmul(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int NB, int M, int L, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tilesM = (M + TILE - 1) / TILE;
    int tilesL = (L + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int n = tile / (tilesM * tilesL);
    int rem = tile % (tilesM * tilesL);
    int tileRow = rem / tilesL;
    int tileCol = rem % tilesL;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    const float* An = A + (long long)n * M * K;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.x;
        int bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (n < NB && row < M && ak < K) ? An[(long long)row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < L) ? B[(long long)bk * L + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (n < NB && row < M && col < L) {
        C[((long long)n * M + row) * L + col] = acc;
    }
}
