// level3/38: a multi-layer bidirectional nn.LSTM (batch_first, both biases, gate order i, f, g, o);
// the output is fc(out[:, -1, :]), (batch, output), out[:, t, :] = [h_fwd_t, h_bwd_t]. Activations
// are kept time-major, (seq, batch, .). Per layer l and direction d, with X the layer's input
// sequence (x, then the previous layer's [h_fwd, h_bwd] per step) and d's weights (*_reverse for
// the backward direction):
//   gx = X @ W_ih^T + b_ih + b_hh               (linear_2bias, all steps at once: (seq*batch, 4H))
//   per step (t = 0..seq-1 forward, t = seq-1..0 backward, from h0[2l+d], c0[2l+d]):
//               gates = gx[t] + h_prev @ W_hh^T    (lstm_step, tiled, with the cell update fused)
//               c = f*c_prev + i*g,  h_t = o*tanh(c)
//   next layer's X[t] = [h_fwd_t, h_bwd_t]      (concat_cols)
//   then out = [h_fwd_{seq-1}, h_bwd_{seq-1}] of the last layer @ W_fc^T + b_fc   (concat_cols, linear_forward)
#define TILE 16

// y = x @ W^T + b1 + b2, x (M, K), W (N, K), b1 and b2 (N), y (M, N).
// Shared-memory tiled: each 16x16 block computes a 16x16 tile of y; grid (cdiv(N,16), cdiv(M,16)).
extern "C" __global__ void linear_2bias(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ b1, const float* __restrict__ b2,
                                        float* __restrict__ y, int M, int N, int K) {
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
        y[(long long)row * N + col] = acc + (b1[col] + b2[col]);
    }
}

__device__ float sigmoidf(float v) {
    return 1.0f / (1.0f + expf(-v));
}

// One LSTM time step for a (batch, hidden) tile. gx (B, 4H): this step's input-side pre-activations
// (biases included); h_prev, c_prev, h, c (B, H); w_hh (4H, H). Thread (ty, tx) owns batch row
// blockIdx.y*16+ty and hidden unit blockIdx.x*16+tx, and accumulates its four gate dot products
// h_prev[b, :] . w_hh[g*H + j, :] over shared-memory tiles of h_prev and of the four gate blocks
// of w_hh. grid (cdiv(H,16), cdiv(B,16)), block (16, 16).
// c may be c_prev (each thread reads its own c_prev element before writing it); h must not alias
// h_prev (other blocks read all of h_prev).
extern "C" __global__ void lstm_step(const float* __restrict__ gx, const float* __restrict__ h_prev,
                                     const float* __restrict__ w_hh, const float* c_prev,
                                     float* __restrict__ h, float* c, int B, int H) {
    __shared__ float hs[TILE][TILE];
    __shared__ float ws[4][TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;   // batch row
    int col = blockIdx.x * TILE + tx;   // hidden unit
    int wrow = blockIdx.x * TILE + ty;  // the hidden unit whose four w_hh rows this thread loads
    float acc_i = 0.0f;
    float acc_f = 0.0f;
    float acc_g = 0.0f;
    float acc_o = 0.0f;
    for (int t = 0; t < H; t += TILE) {
        int kk = t + tx;
        hs[ty][tx] = (row < B && kk < H) ? h_prev[(long long)row * H + kk] : 0.0f;
        for (int g = 0; g < 4; ++g) {
            ws[g][ty][tx] = (wrow < H && kk < H) ? w_hh[((long long)g * H + wrow) * H + kk] : 0.0f;
        }
        __syncthreads();
        for (int i = 0; i < TILE; ++i) {
            float hv = hs[ty][i];
            acc_i += hv * ws[0][tx][i];
            acc_f += hv * ws[1][tx][i];
            acc_g += hv * ws[2][tx][i];
            acc_o += hv * ws[3][tx][i];
        }
        __syncthreads();  // the tiles are used up before the next load overwrites them
    }
    if (row < B && col < H) {
        long long gbase = (long long)row * 4 * H;
        float gi = sigmoidf(acc_i + gx[gbase + col]);
        float gf = sigmoidf(acc_f + gx[gbase + H + col]);
        float gg = tanhf(acc_g + gx[gbase + 2 * H + col]);
        float go = sigmoidf(acc_o + gx[gbase + 3 * H + col]);
        long long idx = (long long)row * H + col;
        float cv = gf * c_prev[idx] + gi * gg;
        c[idx] = cv;
        h[idx] = go * tanhf(cv);
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


// nn.Linear: y = x @ W^T + b, x (M, K), W (N, K), b (N), y (M, N); same tiling as linear_2bias.
extern "C" __global__ void linear_forward(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N,
                                          int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int wrow = blockIdx.x * TILE + ty;
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
        __syncthreads();
    }
    if (row < M && col < N) {
        y[(long long)row * N + col] = acc + b[col];
    }
}
