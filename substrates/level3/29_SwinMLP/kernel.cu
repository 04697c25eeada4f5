// level3/29_SwinMLP: the Swin MLP classifier.
//   patch embedding: Conv2d(k = stride = patch) as a tiled matmul over an im2col gather,
//                    written straight into token layout (B, Ho*Wo, C); then LayerNorm
//   per block:       x1  = x + spatial_mlp(window tokens of norm1(x))
//                    out = x1 + fc2(gelu(fc1(norm2(x1))))
//   the spatial MLP is the grouped 1x1 Conv1d over the window tokens: for window w, head g,
//                    y[w, o, g*hd + d] = bias[g*ws2 + o] + sum_i W[g*ws2 + o, i] * xw[w, i, g*hd + d]
//                    with xw the zero-padded (shifted blocks: P_t rows on top, P_l columns left)
//                    input partitioned into ws x ws windows; the padding, window partition,
//                    window reverse and crop are index arithmetic inside spatial_mlp, which only
//                    stores tokens that survive the crop (fused with the residual add)
//   patch merging:   gather of the 2x2 neighbours (x0, x1, x2, x3 concatenated), LayerNorm(4C),
//                    Linear without bias
//   head:            LayerNorm, mean over tokens (AdaptiveAvgPool1d(1)), Linear
// LayerNorm is one block per row, two passes (mean, then biased variance) in fp32 with
// shared-memory trees. GELU is nn.GELU's exact erf form, fused into fc1's epilogue. Every matmul
// is a TILE x TILE shared-memory tiled product, one thread per output element, each tile's
// partial product summed separately (a blocked fp32 sum over the reduced axis).
#define TILE 16
#define BLOCK 256

// out[b, oh*Wo + ow, co] = bias[co] + sum_{ci, ki, kj} w[co, ci, ki, kj] * x[b, ci, oh*sh + ki, ow*sw + kj]
// (Conv2d without padding). M = B*Ho*Wo rows, N = Cout columns, K = Cin*kh*kw.
// grid (cdiv(Cout, TILE), cdiv(M, TILE)), block (TILE, TILE).
extern "C" __global__ void patch_embed_gemm(const float* __restrict__ x, const float* __restrict__ w,
                                            const float* __restrict__ b, float* __restrict__ out,
                                            int Bn, int Cin, int Hin, int Win, int kh, int kw,
                                            int sh, int sw, int Ho, int Wo, int Cout) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int M = Bn * Ho * Wo;
    int K = Cin * kh * kw;
    int row = blockIdx.y * TILE + ty;   // output token (b, oh, ow)
    int col = blockIdx.x * TILE + tx;   // output channel
    int wrow = blockIdx.x * TILE + ty;  // the output channel whose weights this thread loads
    int bb = row / (Ho * Wo);
    int oh = (row / Wo) % Ho;
    int ow = row % Wo;

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int kk = t + tx;
        float xv = 0.0f;
        if (row < M && kk < K) {
            int ci = kk / (kh * kw);
            int ki = (kk / kw) % kh;
            int kj = kk % kw;
            xv = x[(((long long)bb * Cin + ci) * Hin + (long long)oh * sh + ki) * Win + (long long)ow * sw + kj];
        }
        xs[ty][tx] = xv;
        ws[ty][tx] = (wrow < Cout && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += xs[ty][i] * ws[tx][i];
        }
        acc += part;
        __syncthreads();
    }
    if (row < M && col < Cout) {
        out[(long long)row * Cout + col] = acc + b[col];
    }
}

// y = (x - mean) * rsqrt(var + eps) * weight + bias over each contiguous row of cols elements
// (biased variance, two passes in fp32). One block per row.
extern "C" __global__ void layer_norm_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ y,
                                           long long rows, int cols, float eps) {
    __shared__ float sdata[BLOCK];
    long long r = blockIdx.x;
    const float* row = x + r * cols;
    float acc = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
            acc += row[j];
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mean = sdata[0] / (float)cols;
    __syncthreads();
    float sq = 0.0f;
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
            float d = row[j] - mean;
            sq += d * d;
        }
    }
    sdata[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float invstd = rsqrtf(sdata[0] / (float)cols + eps);
    if (r < rows) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) {
            y[r * cols + j] = (row[j] - mean) * invstd * weight[j] + bias[j];
        }
    }
}

// The window spatial MLP of one block, fused with its residual add. xn, shortcut and out are
// (B, H, W, C) token grids; the padded grid is (Hp, Wp) with the input at offset (P_t, P_l) and
// zeros elsewhere, cut into (Hp/ws) x (Wp/ws) windows of ws2 = ws*ws tokens, token i of a window
// at (i / ws, i % ws). For window win, head g (channels g*hd .. g*hd + hd - 1):
//   y[o, d] = bias[g*ws2 + o] + sum_i w[g*ws2 + o, i] * xpad[token i, g*hd + d]
// and out = shortcut + y at the unpadded position of token o (tokens in the padding are dropped).
// grid (cdiv(hd, TILE), cdiv(ws2, TILE), B * nwin * nH), block (TILE, TILE).
extern "C" __global__ void spatial_mlp(const float* __restrict__ xn, const float* __restrict__ w,
                                       const float* __restrict__ bias, const float* __restrict__ shortcut,
                                       float* __restrict__ out, int H, int W, int C, int nH, int ws,
                                       int P_t, int P_l, int Hp, int Wp) {
    __shared__ float wsh[TILE][TILE];
    __shared__ float xsh[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int ws2 = ws * ws;
    int hd = C / nH;
    int nwx = Wp / ws;
    int nwin = (Hp / ws) * nwx;
    int z = blockIdx.z;
    int g = z % nH;
    int win = (z / nH) % nwin;
    int bb = z / (nH * nwin);
    int wy = win / nwx;
    int wx = win % nwx;
    int o = blockIdx.y * TILE + ty;  // output token of the window
    int d = blockIdx.x * TILE + tx;  // channel inside the head
    const float* wg = w + (long long)g * ws2 * ws2;

    float acc = 0.0f;
    for (int t = 0; t < ws2; t += TILE) {
        int iw = t + tx;  // input token of the weight this thread loads
        int ix = t + ty;  // input token of the activation this thread loads
        wsh[ty][tx] = (o < ws2 && iw < ws2) ? wg[(long long)o * ws2 + iw] : 0.0f;
        float xv = 0.0f;  // zero padding
        if (ix < ws2 && d < hd) {
            int hh = wy * ws + ix / ws - P_t;
            int ww = wx * ws + ix % ws - P_l;
            if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
                xv = xn[(((long long)bb * H + hh) * W + ww) * C + (long long)g * hd + d];
            }
        }
        xsh[ty][tx] = xv;
        __syncthreads();
        float part = 0.0f;
        for (int m = 0; m < TILE; ++m) {
            part += wsh[ty][m] * xsh[m][tx];
        }
        acc += part;
        __syncthreads();
    }
    if (o < ws2 && d < hd) {
        int hh = wy * ws + o / ws - P_t;
        int ww = wx * ws + o % ws - P_l;
        if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
            long long idx = (((long long)bb * H + hh) * W + ww) * C + (long long)g * hd + d;
            out[idx] = shortcut[idx] + (acc + bias[g * ws2 + o]);
        }
    }
}

__device__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
}

// out = act(x @ w^T + b); x (M, K), w (N, K), b (N), out (M, N); act = exact GELU if apply_gelu
extern "C" __global__ void linear_bias_act(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ out,
                                           int M, int N, int K, int apply_gelu) {
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
        float v = acc + b[col];
        if (apply_gelu) {
            v = gelu_erf(v);
        }
        out[(long long)row * N + col] = v;
    }
}

// out = res + x @ w^T + b; x (M, K), w (N, K), b (N), res and out (M, N)
extern "C" __global__ void linear_bias_residual(const float* __restrict__ x, const float* __restrict__ w,
                                                const float* __restrict__ b, const float* __restrict__ res,
                                                float* __restrict__ out, int M, int N, int K) {
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
        long long o = (long long)row * N + col;
        out[o] = res[o] + (acc + b[col]);
    }
}

// out = x @ w^T; x (M, K), w (N, K), out (M, N) (PatchMerging's reduction, bias=False)
extern "C" __global__ void linear_nobias(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ out, int M, int N, int K) {
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
        out[(long long)row * N + col] = acc;
    }
}

// PatchMerging's gather: x (B, H, W, C) -> out (B, H/2, W/2, 4C) with
// out[b, i, j, q*C + c] = x[b, 2i + (q & 1), 2j + (q >> 1), c]   (the order x0, x1, x2, x3)
extern "C" __global__ void patch_merge_gather(const float* __restrict__ x, float* __restrict__ out,
                                              long long n, int H, int W, int C) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int H2 = H / 2;
        int W2 = W / 2;
        int c4 = (int)(i % (4LL * C));
        int j = (int)((i / (4LL * C)) % W2);
        int r = (int)((i / (4LL * C * W2)) % H2);
        long long bb = i / (4LL * C * W2 * H2);
        int q = c4 / C;
        int c = c4 % C;
        int hh = 2 * r + (q & 1);
        int ww = 2 * j + (q >> 1);
        out[i] = x[((bb * H + hh) * W + ww) * C + c];
    }
}

// out[b, c] = mean over l of x[b, l, c]; x (B, L, C). One block per (b, c), a shared-memory tree.
extern "C" __global__ void mean_tokens(const float* __restrict__ x, float* __restrict__ out,
                                       long long total, int L, int C) {
    __shared__ float sdata[BLOCK];
    long long r = blockIdx.x;  // b * C + c
    float acc = 0.0f;
    if (r < total) {
        long long bb = r / C;
        int c = (int)(r % C);
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            acc += x[(bb * L + l) * C + c];
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (r < total && threadIdx.x == 0) {
        out[r] = sdata[0] / (float)L;
    }
}
