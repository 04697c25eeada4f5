// C = A @ B with A (M, K), B (K, N), all row-major. Shared-memory tiles of TILE x TILE;
// block (TILE, TILE), one thread per output element. Edge tiles are zero-filled.
#define TILE 16

extern "C" __global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        // threads outside C still load, so every tile is complete for the others
        As[ty][tx] = (row < M && t * TILE + tx < K) ? A[(long long)row * K + t * TILE + tx] : 0.0f;
        Bs[ty][tx] = (t * TILE + ty < K && col < N) ? B[(long long)(t * TILE + ty) * N + col]
                                                    : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; ++i) {
            acc += As[ty][i] * Bs[i][tx];
        }
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
