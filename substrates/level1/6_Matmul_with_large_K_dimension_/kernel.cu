// Matmul with a very large K (A (M, K) @ B (K, N), K ~ 5e5): split-K.
// Pass 1: every (K split, output tile) gets its own block, a tiled shared-memory matmul over its
// K range; each tile's 32 products are summed into `part` before joining `acc`, so the serial sum
// stays short. Pass 2 sums the splits of each output with a shared-memory tree.
#define TILE 32

extern "C" __global__ void matmul_splitk_partial(const float* __restrict__ A, const float* __restrict__ B,
                                                 float* __restrict__ partial, int M, int N, int K,
                                                 int kchunk) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tilesM = (M + TILE - 1) / TILE;
    int tilesN = (N + TILE - 1) / TILE;
    int tile = blockIdx.x;
    int split = tile / (tilesM * tilesN);
    int rem = tile % (tilesM * tilesN);
    int tileRow = rem / tilesN;
    int tileCol = rem % tilesN;
    int row = tileRow * TILE + threadIdx.y;
    int col = tileCol * TILE + threadIdx.x;
    int kbeg = split * kchunk;
    int kend = kbeg + kchunk;
    if (kend > K) kend = K;
    float acc = 0.0f;
    for (int t = kbeg; t < kend; t += TILE) {
        int ak = t + threadIdx.x;
        int bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < kend) ? A[(long long)row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < kend && col < N) ? B[(long long)bk * N + col] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int kk = 0; kk < TILE; ++kk) {
            part += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        }
        acc += part;
        __syncthreads();
    }
    if (row < M && col < N) {
        partial[((long long)split * M + row) * N + col] = acc;
    }
}

// partial is (splits, M*N); block (32, 32): x walks 32 outputs, y walks the splits.
extern "C" __global__ void splitk_reduce(const float* __restrict__ partial, float* __restrict__ C,
                                         long long mn, int splits) {
    __shared__ float sdata[TILE][TILE + 1];
    long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    if (o < mn) {
        for (int s = threadIdx.y; s < splits; s += blockDim.y) {
            acc += partial[(long long)s * mn + o];
        }
    }
    sdata[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (threadIdx.y < s) sdata[threadIdx.y][threadIdx.x] += sdata[threadIdx.y + s][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && o < mn) {
        C[o] = sdata[0][threadIdx.x];
    }
}
