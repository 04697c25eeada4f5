// 4-D tensor times matrix, einsum "bijl,lk->bijk": the (b, i, j) indices of A (b, i, j, l) are one
// flat row index r = (b * I + i) * J + j, so C[r, k] = sum_l A[r, l] * B[l, k].
// Tiled shared-memory matmul; a flat 1-D grid over (tile row, tile column).
#define TILE 32

extern "C" __global__ void tensor4_matmul(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, long long rows, int KO, int L) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tilesK = (KO + TILE - 1) / TILE;
    long long tile = blockIdx.x;
    long long tileRow = tile / tilesK;
    int tileCol = (int)(tile % tilesK);
    long long row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < L; t += TILE) {
        int al = t + threadIdx.x;
        int bl = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < rows && al < L) ? A[row * L + al] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bl < L && col < KO) ? B[(long long)bl * KO + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < rows && col < KO) {
        C[row * KO + col] = acc;
    }
}
