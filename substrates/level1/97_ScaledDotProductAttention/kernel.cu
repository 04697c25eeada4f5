// Scaled dot-product attention, no mask, no dropout: out = softmax(Q K^T * scale) V per (batch, head).
// Q (BH, Lq, E), K (BH, Lk, E), V (BH, Lk, Ev), row-major per head. Three kernels: a tiled
// Q K^T into a scores buffer, a row softmax (max subtracted) into a probabilities buffer, and a
// tiled P V. Tiles are TILE x TILE, block (TILE, TILE), grid (column tiles, row tiles, BH);
// edge tiles are zero-filled.
#define TILE 16

extern "C" __global__ void attn_scores(const float* __restrict__ q, const float* __restrict__ k,
                                       float* __restrict__ scores, int lq, int lk, int e, float scale) {
    __shared__ float Qs[TILE][TILE];
    __shared__ float Ks[TILE][TILE + 1];  // padded: the inner loop reads it down a column
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long bh = blockIdx.z;
    int row = blockIdx.y * TILE + ty;   // query index
    int col = blockIdx.x * TILE + tx;   // key index of this thread's output
    int krow = blockIdx.x * TILE + ty;  // key row this thread loads
    const float* qb = q + bh * lq * e;
    const float* kb = k + bh * lk * e;

    float acc = 0.0f;
    for (int t = 0; t < (e + TILE - 1) / TILE; ++t) {
        // threads outside the output still load, so every tile is complete for the others
        Qs[ty][tx] = (row < lq && t * TILE + tx < e) ? qb[(long long)row * e + t * TILE + tx] : 0.0f;
        Ks[ty][tx] = (krow < lk && t * TILE + tx < e) ? kb[(long long)krow * e + t * TILE + tx] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; ++j) {
            acc += Qs[ty][j] * Ks[tx][j];
        }
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (row < lq && col < lk) {
        scores[(bh * lq + row) * lk + col] = acc * scale;
    }
}

// Softmax over each row of a (rows, cols) matrix: one block per row, three passes over the row.
// Block size is fixed at 256 in launch.py and must match the shared array.
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out,
                                        int rows, int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* xr = x + (long long)row * cols;
    float* outr = out + (long long)row * cols;

    // pass 1: the row max, so expf never overflows
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        m = fmaxf(m, xr[j]);
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    float row_max = sdata[0];
    __syncthreads();  // everyone has read the max before sdata is reused

    // pass 2: sum of shifted exponentials
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        acc += expf(xr[j] - row_max);
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float row_sum = sdata[0];

    // pass 3: normalise
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        outr[j] = expf(xr[j] - row_max) / row_sum;
    }
}

// out (Lq, Ev) = P (Lq, Lk) @ V (Lk, Ev) for each of the BH heads.
extern "C" __global__ void attn_output(const float* __restrict__ probs, const float* __restrict__ v,
                                       float* __restrict__ out, int lq, int lk, int ev) {
    __shared__ float Ps[TILE][TILE];
    __shared__ float Vs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long bh = blockIdx.z;
    int row = blockIdx.y * TILE + ty;  // query index
    int col = blockIdx.x * TILE + tx;  // value feature
    const float* pb = probs + bh * lq * lk;
    const float* vb = v + bh * lk * ev;

    float acc = 0.0f;
    for (int t = 0; t < (lk + TILE - 1) / TILE; ++t) {
        Ps[ty][tx] = (row < lq && t * TILE + tx < lk) ? pb[(long long)row * lk + t * TILE + tx] : 0.0f;
        Vs[ty][tx] = (t * TILE + ty < lk && col < ev) ? vb[(long long)(t * TILE + ty) * ev + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; ++j) {
            acc += Ps[ty][j] * Vs[j][tx];
        }
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (row < lq && col < ev) {
        out[(bh * lq + row) * ev + col] = acc;
    }
}
