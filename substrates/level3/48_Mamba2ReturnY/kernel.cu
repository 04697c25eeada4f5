// level3/48_Mamba2ReturnY: the chunked SSD (Mamba2 state space duality) forward, returning Y.
// Shapes: X (b, T, h, p), A (b, T, h), B and C (b, T, h, n); T = c * L (c chunks of L steps).
// Position l of chunk cc is time step t = cc * L + l, so every "rearrange b (c l) ..." of the
// reference is the index arithmetic t = cc * L + l on the original contiguous tensors.
//   acs[b, cc, l, h]  = sum_{l' <= l} A[b, cc*L + l', h]            (A_cumsum, kept in A's layout)
//   G[z, l, s]        = (sum_n C[l, n] B[s, n]) * exp(acs[l] - acs[s]) for s <= l, else 0
//                       (z = (b, cc, h); exp(segsum) with the tril mask: exp(-inf) = 0)
//   Yd[t, h, p]       = sum_s G[z, l, s] X[s, p]                         (Y_diag)
//   S[z, p, n]        = sum_l X[l, p] * exp(acs[L-1] - acs[l]) * B[l, n] (intra-chunk states)
//   Z[b, h, k]        = cumsum of (0, acs[0, L-1], acs[1, L-1], ...)      (pad then cumsum)
//   new[b, zz, h]     = sum_{c' <= zz} exp(Z[zz] - Z[c']) * Sin[c'],  Sin = (initial, S[0], S[1], ...)
//   Y[t, h, p]        = Yd + exp(acs[l]) * sum_n C[l, n] new[b, cc, h, p, n]   (Y_diag + Y_off)
// The outputs reach 1e20 and cancel (Y_diag against Y_off) down to O(1), so the rounding follows
// the reference's own fp32 evaluation: the cumsums associate as torch's CUDA scan does (cumsum_scan),
// every exp takes the same difference of cumsums, each product is one fp32 FMA chain over its
// contracted index in order (a plain GEMM's k loop), and Y_off is rounded before it is added.
// The matmuls are TILE x TILE shared-memory tiled products batched over (b, cc, h) through grid z,
// one thread per output element.
#define TILE 16

// Inclusive prefix sum along one dimension of a tensor seen as (outer, len, inner), associated as
// torch's CUDA cumsum of a last dimension associates it: one block of nx = 2^log_nx threads per
// row (launch.py picks log_nx as torch does), chunks of 2 * nx elements scanned in shared memory by
// Sklansky's method (at step m, each element of the upper half of a 2^(m+1) group adds the last
// element of the lower half), the total of the chunks before added to a chunk's first element.
extern "C" __global__ void cumsum_scan(const float* __restrict__ x, float* __restrict__ out,
                                       long long rows, int len, int inner, int log_nx) {
    __shared__ float sdata[1024];  // 2 * nx, nx <= 512
    long long row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    long long base = (row / inner) * len * inner + row % inner;
    int nx = 1 << log_nx;  // == blockDim.x

    float carry = 0.0f;  // every thread keeps the same copy
    for (int start = 0; start < len; start += 2 * nx) {
        int j1 = start + threadIdx.x;
        int j2 = start + nx + threadIdx.x;
        sdata[threadIdx.x] = (j1 < len) ? x[base + (long long)j1 * inner] : 0.0f;  // the tail adds nothing
        sdata[nx + threadIdx.x] = (j2 < len) ? x[base + (long long)j2 * inner] : 0.0f;
        if (threadIdx.x == 0) {
            sdata[0] = sdata[0] + carry;
        }
        __syncthreads();
        for (int m = 0; m <= log_nx; ++m) {
            int half = 1 << m;
            int a = ((threadIdx.x >> m) << (m + 1)) + half;  // first element of this thread's upper half
            int ti = a + (threadIdx.x & (half - 1));
            sdata[ti] = sdata[ti] + sdata[a - 1];  // a - 1 is in a lower half: nobody writes it this step
            __syncthreads();
        }
        if (j1 < len) {
            out[base + (long long)j1 * inner] = sdata[threadIdx.x];
        }
        if (j2 < len) {
            out[base + (long long)j2 * inner] = sdata[nx + threadIdx.x];
        }
        carry = sdata[2 * nx - 1];
        __syncthreads();  // everyone has read the chunk total before the next chunk is loaded
    }
}

// G[z, l, s] = (sum_n C[b, cc*L + l, h, n] * B[b, cc*L + s, h, n]) * exp(acs[l] - acs[s]) where
// s <= l, else 0. z = (bb * nchunks + cc) * H + h. grid (cdiv(L, TILE), cdiv(L, TILE), b*c*h).
extern "C" __global__ void ssd_scores(const float* __restrict__ Cm, const float* __restrict__ Bm,
                                      const float* __restrict__ acs, float* __restrict__ G,
                                      int T, int L, int H, int N, int nchunks) {
    __shared__ float cs[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];  // +1: reading bs[tx][m] down a column without bank conflicts
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int h = z % H;
    int cc = (z / H) % nchunks;
    int bb = z / (H * nchunks);
    int l = blockIdx.y * TILE + ty;     // output row: target step
    int s = blockIdx.x * TILE + tx;     // output column: source step
    int srow = blockIdx.x * TILE + ty;  // the source step this thread loads
    long long t0 = (long long)bb * T + (long long)cc * L;  // first time step of the chunk
    long long rowN = (long long)H * N;                      // stride of one time step in B, C
    const float* cbase = Cm + t0 * rowN + (long long)h * N;
    const float* bbase = Bm + t0 * rowN + (long long)h * N;

    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        int n = t + tx;
        cs[ty][tx] = (l < L && n < N) ? cbase[(long long)l * rowN + n] : 0.0f;
        bs[ty][tx] = (srow < L && n < N) ? bbase[(long long)srow * rowN + n] : 0.0f;
        __syncthreads();
        for (int m = 0; m < TILE; ++m) {
            acc += cs[ty][m] * bs[tx][m];
        }
        __syncthreads();
    }
    if (l < L && s < L) {
        float v = 0.0f;  // exp(-inf) of the masked upper triangle
        if (s <= l) {
            float seg = acs[(t0 + l) * H + h] - acs[(t0 + s) * H + h];
            v = acc * expf(seg);
        }
        G[((long long)z * L + l) * L + s] = v;
    }
}

// Y[b, cc*L + l, h, p] = Yd + Y_off with Yd = sum_s G[z, l, s] * X[b, cc*L + s, h, p] and Y_off
// the value ssd_off left in Y (Y_diag + Y_off, each rounded first, as the reference adds them).
// grid (cdiv(P, TILE), cdiv(L, TILE), b*c*h), block (TILE, TILE).
extern "C" __global__ void ssd_diag_add(const float* __restrict__ G, const float* __restrict__ X,
                                        float* __restrict__ Y, int T, int L, int H, int P, int nchunks) {
    __shared__ float gs[TILE][TILE];
    __shared__ float xs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int h = z % H;
    int cc = (z / H) % nchunks;
    int bb = z / (H * nchunks);
    int l = blockIdx.y * TILE + ty;  // target step
    int p = blockIdx.x * TILE + tx;  // head channel
    long long t0 = (long long)bb * T + (long long)cc * L;
    long long rowP = (long long)H * P;  // stride of one time step in X and Y
    const float* grow = G + (long long)z * L * L;
    const float* xbase = X + t0 * rowP + (long long)h * P;

    float acc = 0.0f;
    for (int t = 0; t < L; t += TILE) {
        int sg = t + tx;  // source step of the G element this thread loads
        int sx = t + ty;  // source step of the X element this thread loads
        gs[ty][tx] = (l < L && sg < L) ? grow[(long long)l * L + sg] : 0.0f;
        xs[ty][tx] = (sx < L && p < P) ? xbase[(long long)sx * rowP + p] : 0.0f;
        __syncthreads();
        for (int m = 0; m < TILE; ++m) {
            acc += gs[ty][m] * xs[m][tx];
        }
        __syncthreads();
    }
    if (l < L && p < P) {
        long long o = (t0 + l) * rowP + (long long)h * P + p;
        Y[o] = acc + Y[o];
    }
}

// S[z, p, n] = sum_l X[b, cc*L + l, h, p] * exp(acs[L-1] - acs[l]) * B[b, cc*L + l, h, n]; S is
// (b, c, h, p, n). grid (cdiv(N, TILE), cdiv(P, TILE), b*c*h), block (TILE, TILE).
extern "C" __global__ void chunk_states(const float* __restrict__ Bm, const float* __restrict__ X,
                                        const float* __restrict__ acs, float* __restrict__ S,
                                        int T, int L, int H, int P, int N, int nchunks) {
    __shared__ float xs[TILE][TILE + 1];
    __shared__ float bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int h = z % H;
    int cc = (z / H) % nchunks;
    int bb = z / (H * nchunks);
    int p = blockIdx.y * TILE + ty;   // output row: head channel
    int n = blockIdx.x * TILE + tx;   // output column: state channel
    int px = blockIdx.y * TILE + tx;  // the head channel of the X element this thread loads
    long long t0 = (long long)bb * T + (long long)cc * L;
    long long rowP = (long long)H * P;
    long long rowN = (long long)H * N;
    const float* xbase = X + t0 * rowP + (long long)h * P;
    const float* bbase = Bm + t0 * rowN + (long long)h * N;
    float last = acs[(t0 + L - 1) * H + h];  // A_cumsum[..., -1:] of this chunk

    float acc = 0.0f;
    for (int t = 0; t < L; t += TILE) {
        int lx = t + ty;  // step of the X element this thread loads (into xs[px][lx])
        int lb = t + ty;  // step of the B element this thread loads
        xs[tx][ty] = (lx < L && px < P) ? xbase[(long long)lx * rowP + px] : 0.0f;
        float bv = 0.0f;
        if (lb < L && n < N) {
            float decay = expf(last - acs[(t0 + lb) * H + h]);
            bv = bbase[(long long)lb * rowN + n] * decay;
        }
        bs[ty][tx] = bv;
        __syncthreads();
        for (int m = 0; m < TILE; ++m) {
            acc += xs[ty][m] * bs[m][tx];
        }
        __syncthreads();
    }
    if (p < P && n < N) {
        S[((long long)z * P + p) * N + n] = acc;
    }
}

// Zin[b, h, k] = 0 for k == 0, else acs[b, k-1, L-1, h]: F.pad(A_cumsum[..., -1], (1, 0)), (b, h, c+1),
// which cumsum_scan then turns into Z. One thread per element.
extern "C" __global__ void chunk_totals(const float* __restrict__ acs, float* __restrict__ zin,
                                        int batch, int T, int L, int H, int nchunks) {
    long long total = (long long)batch * H * (nchunks + 1);
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int k = (int)(i % (nchunks + 1));
        int h = (int)((i / (nchunks + 1)) % H);
        int bb = (int)(i / ((long long)(nchunks + 1) * H));
        float v = 0.0f;
        if (k > 0) {
            v = acs[((long long)bb * T + (long long)(k - 1) * L + (L - 1)) * H + h];
        }
        zin[i] = v;
    }
}

// Inter-chunk recurrence: for zz in [z_begin, z_begin + z_count),
//   out[b, zz - z_begin, h, p, n] = sum_{c' <= zz} exp(Z[zz] - Z[c']) * Sin[b, c', h, p, n]
// with Z the cumsum of the padded chunk totals, (b, h, c+1), and Sin[c'] = initial[b, 0, h, p, n]
// if c' == 0 (zero when has_init == 0) else S[b, c'-1, h, p, n]. One thread per output element;
// the chunk loop is short (c + 1 terms) and sums in order, as the reference's product over c does.
extern "C" __global__ void state_passing(const float* __restrict__ S, const float* __restrict__ init,
                                         int has_init, const float* __restrict__ Z,
                                         float* __restrict__ out, int batch, int H, int P, int N,
                                         int nchunks, int z_begin, int z_count) {
    long long total = (long long)batch * z_count * H * P * N;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long pn = (long long)P * N;
        long long e = i % pn;  // p * N + n
        int h = (int)((i / pn) % H);
        int zi = (int)((i / (pn * H)) % z_count);
        int bb = (int)(i / (pn * H * z_count));
        int zz = z_begin + zi;
        const float* zrow = Z + ((long long)bb * H + h) * (nchunks + 1);
        float acc = 0.0f;
        for (int cp = 0; cp <= zz; ++cp) {
            float sv;
            if (cp == 0) {
                sv = has_init ? init[((long long)bb * H + h) * pn + e] : 0.0f;
            } else {
                sv = S[(((long long)bb * nchunks + (cp - 1)) * H + h) * pn + e];
            }
            acc += expf(zrow[zz] - zrow[cp]) * sv;
        }
        out[i] = acc;
    }
}

// Y[b, cc*L + l, h, p] = (sum_n C[b, cc*L + l, h, n] * Sp[z, p, n]) * exp(acs[l]) (Y_off; ssd_diag_add
// adds Y_diag to it), with Sp the states entering each chunk, (b, c, h, p, n).
// grid (cdiv(P, TILE), cdiv(L, TILE), b*c*h), block (TILE, TILE).
extern "C" __global__ void ssd_off(const float* __restrict__ Cm, const float* __restrict__ Sp,
                                   const float* __restrict__ acs, float* __restrict__ Y, int T, int L,
                                   int H, int P, int N, int nchunks) {
    __shared__ float cs[TILE][TILE];
    __shared__ float ss[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int z = blockIdx.z;
    int h = z % H;
    int cc = (z / H) % nchunks;
    int bb = z / (H * nchunks);
    int l = blockIdx.y * TILE + ty;     // output row: step
    int p = blockIdx.x * TILE + tx;     // output column: head channel
    int prow = blockIdx.x * TILE + ty;  // the head channel of the state row this thread loads
    long long t0 = (long long)bb * T + (long long)cc * L;
    long long rowN = (long long)H * N;
    long long rowP = (long long)H * P;
    const float* cbase = Cm + t0 * rowN + (long long)h * N;
    const float* sbase = Sp + (long long)z * P * N;

    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        int n = t + tx;
        cs[ty][tx] = (l < L && n < N) ? cbase[(long long)l * rowN + n] : 0.0f;
        ss[ty][tx] = (prow < P && n < N) ? sbase[(long long)prow * N + n] : 0.0f;
        __syncthreads();
        for (int m = 0; m < TILE; ++m) {
            acc += cs[ty][m] * ss[tx][m];
        }
        __syncthreads();
    }
    if (l < L && p < P) {
        long long o = (t0 + l) * rowP + (long long)h * P + p;
        float decay = expf(acs[(t0 + l) * H + h]);
        Y[o] = acc * decay;
    }
}
