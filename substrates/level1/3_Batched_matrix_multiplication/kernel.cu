// Batched matmul: C[b] = A[b] @ B[b], A (batch, M, K), B (batch, K, N), C (batch, M, N).
// Tiled shared-memory matmul; a flat 1-D grid over (batch, tile row, tile column).
#define TILE 32

extern "C" __global__ void bmm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int batch, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tilesM = (M + TILE - 1) / TILE;
    int tilesN = (N + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int b = tile / (tilesM * tilesN);
    int rem = tile % (tilesM * tilesN);
    int tileRow = rem / tilesN;
    int tileCol = rem % tilesN;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    const float* Ab = A + (long long)b * M * K;
    const float* Bb = B + (long long)b * K * N;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.x;
        int bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (b < batch && row < M && ak < K) ? Ab[(long long)row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (b < batch && bk < K && col < N) ? Bb[(long long)bk * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (b < batch && row < M && col < N) {
        C[((long long)b * M + row) * N + col] = acc;
    }
}
