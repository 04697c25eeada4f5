// level3/30_SwinTransformerV2: a Swin Transformer V2 classifier.
//   patch_embed: Conv2d(k = stride = patch) as a tiled implicit GEMM written token-major
//                (B, Ph*Pw, C) with its bias, then LayerNorm (patch_norm)
//   per stage, per block (post-norm residuals, V2):
//     xw   = window_partition(roll(x, -shift))                   (an index gather)
//     qkv  = xw @ Wqkv^T + cat(q_bias, 0, v_bias)                 (no k bias)
//     q, k = F.normalize(q), F.normalize(k) over each head's hs channels (eps 1e-12), in place
//     att  = (q . k) * exp(min(logit_scale[h], log 100)) + 16 * sigmoid(cpb[rpi[i, j], h])
//            (+ attn_mask[window % nW, i, j] on shifted blocks), softmax over j
//     y    = att @ v (heads merged), attn = y @ Wproj^T + bproj
//     x    = x + norm1(roll(window_reverse(attn), +shift))         (gather, then LN + residual)
//     x    = x + norm2(fc2(gelu(fc1(x))))                           (exact erf GELU)
//     cpb  = 16 * sigmoid(relu(table @ W1^T + b1) @ W2^T): the continuous relative position bias
//            MLP over relative_coords_table, computed by the same tiled linear kernels
//   patch merging: gather [x(2i,2j), x(2i+1,2j), x(2i,2j+1), x(2i+1,2j+1)] -> Linear (no bias) -> LN
//   final LayerNorm, mean over tokens (AdaptiveAvgPool1d(1)), head Linear.
// Every matmul is a TILE x TILE shared-memory tiled product, one thread per output element, each
// tile's partial product summed separately (a blocked fp32 sum); attention matmuls are batched
// over windows x heads through grid z. LayerNorm and softmax are one block per row with
// shared-memory trees in fp32.
#define TILE 16
#define BLOCK 256

// act: 0 identity, 1 relu, 2 exact (erf) GELU, 3 16 * sigmoid
__device__ float apply_act(float v, int act) {
    if (act == 1) {
        v = fmaxf(v, 0.0f);
    } else if (act == 2) {
        v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    } else if (act == 3) {
        v = 16.0f / (1.0f + expf(-v));
    }
    return v;
}

// Conv2d with bias (NCHW input, groups = 1) as a tiled implicit GEMM, written token-major:
// y[(n * OH * OW + oh * OW + ow) * C_out + co] (the flatten(2).transpose(1, 2) of the reference).
// rows = output pixels m = (n, oh, ow), columns = output channels co, reduction k = (ci, kh, kw)
// over K = C_in * KH * KW; weight is (C_out, K) row-major.
// grid (cdiv(C_out, TILE), cdiv(N * OH * OW, TILE)), block (TILE, TILE).
extern "C" __global__ void conv2d_tokens(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ b, float* __restrict__ y, int N,
                                         int C_in, int H, int W, int C_out, int OH, int OW, int KH,
                                         int KW, int stride_h, int stride_w, int pad_h, int pad_w) {
    __shared__ float xs[TILE][TILE];      // xs[pixel][kk]
    __shared__ float ws[TILE][TILE + 1];  // ws[channel][kk]
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long M = (long long)N * OH * OW;
    int KHW = KH * KW;
    int K = C_in * KHW;
    long long m = (long long)blockIdx.y * TILE + ty;  // the pixel this thread loads and computes
    int col = blockIdx.x * TILE + tx;                 // the output channel this thread computes
    int wrow = blockIdx.x * TILE + ty;                // the weight row this thread loads
    int ow = 0;
    int oh = 0;
    int n = 0;
    if (m < M) {
        ow = (int)(m % OW);
        oh = (int)((m / OW) % OH);
        n = (int)(m / ((long long)OW * OH));
    }
    int ih0 = oh * stride_h - pad_h;
    int iw0 = ow * stride_w - pad_w;
    const float* xn = x + (long long)n * C_in * H * W;

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int kk = t + tx;
        float av = 0.0f;
        if (m < M && kk < K) {
            int ci = kk / KHW;
            int r = kk % KHW;
            int ih = ih0 + r / KW;
            int iw = iw0 + r % KW;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                av = xn[((long long)ci * H + ih) * W + iw];
            }
        }
        xs[ty][tx] = av;
        ws[ty][tx] = (wrow < C_out && kk < K) ? w[(long long)wrow * K + kk] : 0.0f;
        __syncthreads();
        float part = 0.0f;
        for (int i = 0; i < TILE; ++i) {
            part += xs[ty][i] * ws[tx][i];
        }
        acc += part;
        __syncthreads();
    }
    if (m < M && col < C_out) {
        y[m * C_out + col] = acc + b[col];
    }
}

// y = (x - mean) * rsqrt(var + eps) * weight + bias over each contiguous row of cols elements
// (biased variance, two passes in fp32); with add_res, y = res + that. One block per row.
extern "C" __global__ void layer_norm_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                           const float* __restrict__ bias, const float* __restrict__ res,
                                           float* __restrict__ y, long long rows, int cols, float eps,
                                           int add_res) {
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
            float v = (row[j] - mean) * invstd * weight[j] + bias[j];
            if (add_res) {
                v = res[r * cols + j] + v;
            }
            y[r * cols + j] = v;
        }
    }
}

// out = act(x @ w^T + b); x (M, K), w (N, K), b (N), out (M, N).
// grid (cdiv(N, TILE), cdiv(M, TILE)), block (TILE, TILE).
extern "C" __global__ void linear_bias_act(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ out,
                                           int M, int N, int K, int act) {
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
        out[(long long)row * N + col] = apply_act(acc + b[col], act);
    }
}

// out = act(x @ w^T); x (M, K), w (N, K), out (M, N). Same tiling as linear_bias_act.
extern "C" __global__ void linear_nobias_act(const float* __restrict__ x, const float* __restrict__ w,
                                             float* __restrict__ out, int M, int N, int K, int act) {
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
        out[(long long)row * N + col] = apply_act(acc, act);
    }
}

// qkv = x @ w^T + bias with bias = cat(q_bias, zeros, v_bias): columns [0, C) get q_bias,
// [C, 2C) none (no k bias), [2C, 3C) v_bias. x (M, C), w (3C, C), out (M, 3C).
// grid (cdiv(3C, TILE), cdiv(M, TILE)), block (TILE, TILE).
extern "C" __global__ void linear_qkv(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ q_bias, const float* __restrict__ v_bias,
                                      float* __restrict__ out, int M, int C) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int N = 3 * C;
    int K = C;
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
        float bv = 0.0f;
        if (col < C) {
            bv = q_bias[col];
        } else if (col >= 2 * C) {
            bv = v_bias[col - 2 * C];
        }
        out[(long long)row * N + col] = acc + bv;
    }
}

// windows[((b * nWh + wh) * nWw + ww) * ws * ws + i * ws + j, c] =
//     x[b, (wh * ws + i + shift) % H, (ww * ws + j + shift) % W, c]
// i.e. window_partition(torch.roll(x, (-shift, -shift), (1, 2))). x (B, H*W, C). One thread per
// element of the output, which has as many elements as x.
extern "C" __global__ void window_partition_roll(const float* __restrict__ x, float* __restrict__ win,
                                                 int H, int W, int C, int wsz, int shift, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = (int)(i % C);
        long long t = i / C;            // token row in window order
        int nWw = W / wsz;
        int nWh = H / wsz;
        int pj = (int)(t % wsz);
        int pi = (int)((t / wsz) % wsz);
        long long wi = t / ((long long)wsz * wsz);
        int ww = (int)(wi % nWw);
        int wh = (int)((wi / nWw) % nWh);
        long long b = wi / ((long long)nWw * nWh);
        int hh = (wh * wsz + pi + shift) % H;
        int wc = (ww * wsz + pj + shift) % W;
        win[i] = x[((b * H + hh) * W + wc) * C + c];
    }
}

// The inverse: x[b, h, w, c] = windows[row of shifted position ((h - shift) mod H, (w - shift) mod W)]
// i.e. torch.roll(window_reverse(windows), (shift, shift), (1, 2)). Output (B, H*W, C).
extern "C" __global__ void window_reverse_roll(const float* __restrict__ win, float* __restrict__ x,
                                               int H, int W, int C, int wsz, int shift, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = (int)(i % C);
        long long t = i / C;
        int w = (int)(t % W);
        int h = (int)((t / W) % H);
        long long b = t / ((long long)W * H);
        int sh = (h - shift + H) % H;
        int sw = (w - shift + W) % W;
        int nWw = W / wsz;
        int nWh = H / wsz;
        long long wi = (b * nWh + sh / wsz) * nWw + sw / wsz;
        long long src = wi * wsz * wsz + (sh % wsz) * wsz + (sw % wsz);
        x[i] = win[src * C + c];
    }
}

// F.normalize over each head's hs channels of q and of k, in place in qkv (rows, 3C):
// v / max(||v||, 1e-12). One thread per (row, q|k, head) vector; vecs = rows * 2 * nh.
extern "C" __global__ void qk_normalize(float* __restrict__ qkv, long long vecs, int C, int nh, int hs) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < vecs) {
        int h = (int)(i % nh);
        int part = (int)((i / nh) % 2);  // 0: q, 1: k
        long long r = i / (2LL * nh);
        float* v = qkv + r * 3LL * C + (long long)part * C + (long long)h * hs;
        float acc = 0.0f;
        for (int d = 0; d < hs; ++d) {
            acc += v[d] * v[d];
        }
        float denom = fmaxf(sqrtf(acc), 1e-12f);
        for (int d = 0; d < hs; ++d) {
            v[d] = v[d] / denom;
        }
    }
}

// att[z, i, j] = (q_i . k_j) * exp(min(logit_scale[h], max_log)) + rpb[rpi[i * T + j] * nh + h]
//                (+ mask[(bw % nW) * T * T + i * T + j] if has_mask), z = bw * nh + h.
// q, k (already normalized) are read from qkv (B_*T, 3C): q at column h*hs + d, k at C + h*hs + d.
// rpb is the (table_len, nh) bias table, already through 16 * sigmoid. Without a mask, mask is
// any float tensor and is not read.
// grid (cdiv(T, TILE), cdiv(T, TILE), B_ * nh), block (TILE, TILE).
extern "C" __global__ void attn_scores(const float* __restrict__ qkv, const float* __restrict__ logit_scale,
                                       const float* __restrict__ rpb, const long long* __restrict__ rpi,
                                       const float* __restrict__ mask, float* __restrict__ att,
                                       int T, int C, int nh, int hs, int nW, int has_mask, float max_log) {
    __shared__ float qs[TILE][TILE];
    __shared__ float ks[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int bw = z / nh;
    int h = z % nh;
    int i = blockIdx.y * TILE + ty;     // query position
    int j = blockIdx.x * TILE + tx;     // key position
    int krow = blockIdx.x * TILE + ty;  // the key position this thread loads
    long long row3 = 3LL * C;
    const float* base = qkv + (long long)bw * T * row3 + (long long)h * hs;

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
        float scale = expf(fminf(logit_scale[h], max_log));
        long long ij = (long long)i * T + j;
        float v = acc * scale + rpb[rpi[ij] * nh + h];
        if (has_mask) {
            v = v + mask[(long long)(bw % nW) * T * T + ij];
        }
        att[(long long)z * T * T + ij] = v;
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

// y[bw, i, h*hs + d] = sum_j att[z, i, j] * v[bw, j, h, d]; v read from qkv at column 2C + h*hs + d,
// y is (B_*T, C). grid (cdiv(hs, TILE), cdiv(T, TILE), B_ * nh), block (TILE, TILE).
extern "C" __global__ void attn_values(const float* __restrict__ att, const float* __restrict__ qkv,
                                       float* __restrict__ y, int T, int C, int nh, int hs) {
    __shared__ float as[TILE][TILE];
    __shared__ float vs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int bw = z / nh;
    int h = z % nh;
    int i = blockIdx.y * TILE + ty;  // query position
    int d = blockIdx.x * TILE + tx;  // channel inside the head
    long long row3 = 3LL * C;
    const float* arow = att + (long long)z * T * T;
    const float* vbase = qkv + (long long)bw * T * row3 + 2LL * C + (long long)h * hs;

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
        y[((long long)bw * T + i) * C + (long long)h * hs + d] = acc;
    }
}

// PatchMerging's gather: out[b, i, j, q * C + c] = x[b, 2i + di, 2j + dj, c] with
// (di, dj) = (0,0), (1,0), (0,1), (1,1) for q = 0..3. x (B, H*W, C), out (B, (H/2)*(W/2), 4C).
extern "C" __global__ void patch_merge_gather(const float* __restrict__ x, float* __restrict__ out,
                                              int H, int W, int C, long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int Ho = H / 2;
        int Wo = W / 2;
        int cc = (int)(i % (4 * C));
        long long t = i / (4 * C);
        int oj = (int)(t % Wo);
        int oi = (int)((t / Wo) % Ho);
        long long b = t / ((long long)Wo * Ho);
        int q = cc / C;
        int c = cc % C;
        int di = q % 2;
        int dj = q / 2;
        out[i] = x[((b * H + 2 * oi + di) * W + 2 * oj + dj) * C + c];
    }
}

// out[b, c] = mean over l of x[b, l, c]; x (B, L, C). One block per (b, c), a shared-memory tree.
extern "C" __global__ void mean_tokens(const float* __restrict__ x, float* __restrict__ out,
                                       int B, int L, int C) {
    __shared__ float sdata[BLOCK];
    long long bc = blockIdx.x;
    int c = (int)(bc % C);
    long long b = bc / C;
    float acc = 0.0f;
    if (b < B) {
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            acc += x[(b * L + l) * C + c];
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0 && b < B) {
        out[bc] = sdata[0] / (float)L;
    }
}
