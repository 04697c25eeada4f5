// level3/41: a multi-layer bidirectional nn.GRU (both biases, gate order r, z, n); the output is
// the last layer's per-step output, (seq, batch, 2*hidden), out[t] = [h_fwd_t, h_bwd_t] (batch-major
// with batch_first). Activations are kept time-major, (seq, batch, .). Per layer l and direction d
// (d's weights: *_reverse for the backward one), with X the layer's input sequence (x, then the
// previous layer's [h_fwd_t, h_bwd_t] per step):
//   gx = X @ W_ih^T + b_ih                       (linear_bias, all steps at once: (seq*batch, 3H))
//   per step (t = 0..seq-1 forward, t = seq-1..0 backward, from h0[2l+d]):
//               gh = h_prev @ W_hh^T + b_hh      (gru_step, tiled, with the gate update fused)
//               r = sigmoid(gx_r + gh_r),  z = sigmoid(gx_z + gh_z)
//               n = tanh(gx_n + r * gh_n),  h_t = (1 - z) * n + z * h_prev
//   next layer's X[t] (and, for the last layer, out[t]) = [h_fwd_t, h_bwd_t]   (concat_cols)
#define TILE 16

// y = x @ W^T + b, x (M, K), W (N, K), b (N), y (M, N).
// Shared-memory tiled: each 16x16 block computes a 16x16 tile of y; grid (cdiv(N,16), cdiv(M,16)).
extern "C" __global__ void linear_bias(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                       int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];  // +1: reading ws[tx][i] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // row of x and y
    int col = blockIdx.x * TILE + tx;   // column of y = row of W
    int wrow = blockIdx.x * TILE + ty;  // the row of W this thread loads
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
        y[(long long)row * N + col] = acc + b[col];
    }
}

__device__ float sigmoidf(float v) {
    return 1.0f / (1.0f + expf(-v));
}

// One GRU time step for a (batch, hidden) tile. gx (B, 3H): this step's input-side pre-activations
// (b_ih included); h_prev, h (B, H); w_hh (3H, H); b_hh (3H). Thread (ty, tx) owns batch row
// blockIdx.y*16+ty and hidden unit blockIdx.x*16+tx, and accumulates its three gate dot products
// h_prev[b, :] . w_hh[g*H + j, :] over shared-memory tiles of h_prev and of the three gate blocks
// of w_hh. grid (cdiv(H,16), cdiv(B,16)), block (16, 16).
// h must not alias h_prev (other blocks read all of h_prev).
extern "C" __global__ void gru_step(const float* __restrict__ gx, const float* __restrict__ h_prev,
                                    const float* __restrict__ w_hh, const float* __restrict__ b_hh,
                                    float* __restrict__ h, int B, int H) {
    __shared__ float hs[TILE][TILE];
    __shared__ float ws[3][TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // batch row
    int col = blockIdx.x * TILE + tx;   // hidden unit
    int wrow = blockIdx.x * TILE + ty;  // the hidden unit whose three w_hh rows this thread loads
    float acc_r = 0.0f;
    float acc_z = 0.0f;
    float acc_n = 0.0f;
    for (int t = 0; t < H; t += TILE) {
        int kk = t + tx;
        hs[ty][tx] = (row < B && kk < H) ? h_prev[(long long)row * H + kk] : 0.0f;
        for (int g = 0; g < 3; ++g) {
            ws[g][ty][tx] = (wrow < H && kk < H) ? w_hh[((long long)g * H + wrow) * H + kk] : 0.0f;
        }
        __syncthreads();
        for (int i = 0; i < TILE; ++i) {
            float hv = hs[ty][i];
            acc_r += hv * ws[0][tx][i];
            acc_z += hv * ws[1][tx][i];
            acc_n += hv * ws[2][tx][i];
        }
        __syncthreads();  // the tiles are used up before the next load overwrites them
    }
    if (row < B && col < H) {
        long long gbase = (long long)row * 3 * H;
        float r = sigmoidf(gx[gbase + col] + (acc_r + b_hh[col]));
        float z = sigmoidf(gx[gbase + H + col] + (acc_z + b_hh[H + col]));
        float n = tanhf(gx[gbase + 2 * H + col] + r * (acc_n + b_hh[2 * H + col]));
        long long idx = (long long)row * H + col;
        h[idx] = (1.0f - z) * n + z * h_prev[idx];
    }
}

// out[r, :] = [a[r, :], b[r, :]] with a (rows, ca), b (rows, cb), out (rows, ca + cb).
extern "C" __global__ void concat_cols(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ out, int rows, int ca, int cb) {
    long long cols = (long long)ca + cb;
    long long n = (long long)rows * cols;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long r = i / cols;
        long long c = i % cols;
        out[i] = c < ca ? a[r * ca + c] : b[r * cb + (c - ca)];
    }
}
