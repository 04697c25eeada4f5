// level3/43_MinGPTCausalAttention: minGPT causal multi-head self-attention with an output projection.
//   qkv = x @ Wattn^T + battn                      (B*T, 3C): q | k | v side by side
//   att[z, i, j] = (q_i . k_j) * scale, -INFINITY where mask[i, j] == 0   (z = b * nh + h)
//   att = softmax over j
//   y[b, i, h * hs + d] = sum_j att[z, i, j] * v[b, j, h, d]   (written straight into (B, T, C))
//   out = y @ Wproj^T + bproj
// The head split and merge are index arithmetic inside the kernels (q, k and v are read from the
// qkv buffer with row stride 3C, y is written with row stride C), so no transpose is materialised.
// Every matmul is a TILE x TILE shared-memory tiled product, one thread per output element, each
// tile's partial product summed separately (a blocked fp32 sum over the reduced axis); the
// attention matmuls are batched over batch x heads through grid z.
#define TILE 16
#define BLOCK 256

// out = x @ w^T + b; x (M, K), w (N, K), b (N), out (M, N)
extern "C" __global__ void linear_bias(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ b, float* __restrict__ out, int M, int N,
                                       int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and out
    int col = blockIdx.x * TILE + tx;   // column of out = row of w
    int wrow = blockIdx.x * TILE + ty;  // the row of w this thread loads

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
        out[(long long)row * N + col] = acc + b[col];
    }
}

// att[z, i, j] = (sum_d q[b, i, h, d] * k[b, j, h, d]) * scale, or -INFINITY where
// mask[i * mask_stride + j] == 0. q, k are read from qkv (B*T, 3C): q at column h*hs + d,
// k at column C + h*hs + d. grid (cdiv(T, TILE), cdiv(T, TILE), B * nh), block (TILE, TILE).
extern "C" __global__ void attn_scores(const float* __restrict__ qkv, const float* __restrict__ mask,
                                       float* __restrict__ att, int T, int C, int nh, int hs,
                                       int mask_stride, float scale) {
    __shared__ float qs[TILE][TILE];
    __shared__ float ks[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int bb = z / nh;
    int h = z % nh;
    int i = blockIdx.y * TILE + ty;     // query position
    int j = blockIdx.x * TILE + tx;     // key position
    int krow = blockIdx.x * TILE + ty;  // the key position this thread loads
    long long row3 = 3LL * C;
    const float* base = qkv + (long long)bb * T * row3 + (long long)h * hs;

    float acc = 0.0f;
    for (int t = 0; t < hs; t += TILE) {
        int d = t + tx;
        qs[ty][tx] = (i < T && d < hs) ? base[(long long)i * row3 + d] : 0.0f;
        ks[ty][tx] = (krow < T && d < hs) ? base[(long long)krow * row3 + C + d] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int m = 0; m < TILE; ++m) {
            part += qs[ty][m] * ks[tx][m];
        }
        acc += part;
        __syncthreads();
    }
    if (i < T && j < T) {
        float v = acc * scale;
        if (mask[(long long)i * mask_stride + j] == 0.0f) {
            v = -INFINITY;
        }
        att[((long long)z * T + i) * T + j] = v;
    }
}

// softmax of each contiguous row of length len, in place: exp(x - max) / sum(exp(x - max)).
// One block per row; a -INFINITY-seeded fmaxf tree for the max, a shared-memory tree for the sum.
extern "C" __global__ void softmax_rows(float* __restrict__ x, long long rows, int len) {
    __shared__ float sdata[BLOCK];
    long long r = blockIdx.x;
    float* row = x + r * len;
    float m = -INFINITY;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            m = fmaxf(m, row[j]);
        }
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    float rowmax = sdata[0];
    __syncthreads();
    float acc = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            acc += expf(row[j] - rowmax);
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float sum = sdata[0];
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            row[j] = expf(row[j] - rowmax) / sum;
        }
    }
}

// y[b, i, h*hs + d] = sum_j att[z, i, j] * v[b, j, h, d]; v read from qkv at column 2C + h*hs + d,
// y is (B*T, C). grid (cdiv(hs, TILE), cdiv(T, TILE), B * nh), block (TILE, TILE).
extern "C" __global__ void attn_values(const float* __restrict__ att, const float* __restrict__ qkv,
                                       float* __restrict__ y, int T, int C, int nh, int hs) {
    __shared__ float as[TILE][TILE];
    __shared__ float vs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int bb = z / nh;
    int h = z % nh;
    int i = blockIdx.y * TILE + ty;  // query position
    int d = blockIdx.x * TILE + tx;  // channel inside the head
    long long row3 = 3LL * C;
    const float* arow = att + (long long)z * T * T;
    const float* vbase = qkv + (long long)bb * T * row3 + 2LL * C + (long long)h * hs;

    float acc = 0.0f;
    for (int t = 0; t < T; t += TILE) {
        int ja = t + tx;  // key position of the att element this thread loads
        int jv = t + ty;  // key position of the v element this thread loads
        as[ty][tx] = (i < T && ja < T) ? arow[(long long)i * T + ja] : 0.0f;
        vs[ty][tx] = (jv < T && d < hs) ? vbase[(long long)jv * row3 + d] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int m = 0; m < TILE; ++m) {
            part += as[ty][m] * vs[m][tx];
        }
        acc += part;
        __syncthreads();
    }
    if (i < T && d < hs) {
        y[((long long)bb * T + i) * C + (long long)h * hs + d] = acc;
    }
}
