// level3/49_Mamba2ReturnFinalState: the chunked SSD (Mamba2 state space duality) forward,
// returning the final state new_states[:, -1]. Shapes: X (b, T, h, p), A (b, T, h), B (b, T, h, n);
// T = c * L (c chunks of L steps). Position l of chunk cc is time step t = cc * L + l, so every
// "rearrange b (c l) ..." of the reference is the index arithmetic t = cc * L + l on the original
// contiguous tensors. Only what the final state depends on is computed (the reference's Y_diag and
// C are unused by its output):
//   acs[b, cc, l, h]  = sum_{l' <= l} A[b, cc*L + l', h]            (A_cumsum, kept in A's layout)
//   S[z, p, n]        = sum_l X[l, p] * exp(acs[L-1] - acs[l]) * B[l, n] (intra-chunk states,
//                       z = (b, cc, h))
//   Z[k]              = cumsum of (0, acs[0, L-1], acs[1, L-1], ...)      (pad then cumsum)
//   out[b, h, p, n]   = sum_{c' <= c} exp(Z[c] - Z[c']) * Sin[c'],  Sin = (initial, S[0], S[1], ...)
// The matmul is a TILE x TILE shared-memory tiled product batched over (b, cc, h) through grid z,
// one thread per output element, each tile's partial product summed separately (fp32).
#define TILE 16

// Inclusive prefix sum along one dimension of a tensor seen as (outer, len, inner): one block per
// row, chunks of blockDim.x scanned Hillis-Steele in shared memory plus a running carry.
extern "C" __global__ void cumsum_scan(const float* __restrict__ x, float* __restrict__ out,
                                       long long rows, int len, int inner) {
    __shared__ float sdata[256];
    long long row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    long long base = (row / inner) * len * inner + row % inner;

    float carry = 0.0f;  // every thread keeps the same copy
    for (int start = 0; start < len; start += blockDim.x) {
        int j = start + threadIdx.x;
        sdata[threadIdx.x] = (j < len) ? x[base + (long long)j * inner] : 0.0f;  // the tail adds nothing
        __syncthreads();
        for (int offset = 1; offset < blockDim.x; offset <<= 1) {
            float add = (threadIdx.x >= offset) ? sdata[threadIdx.x - offset] : 0.0f;
            __syncthreads();  // all reads of this step before any write
            sdata[threadIdx.x] += add;
            __syncthreads();
        }
        if (j < len) {
            out[base + (long long)j * inner] = carry + sdata[threadIdx.x];
        }
        carry += sdata[blockDim.x - 1];
        __syncthreads();  // everyone has read the chunk total before the next chunk is loaded
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
        float part = 0.0f;
        for (int m = 0; m < TILE; ++m) {
            part += xs[ty][m] * bs[m][tx];
        }
        acc += part;
        __syncthreads();
    }
    if (p < P && n < N) {
        S[((long long)z * P + p) * N + n] = acc;
    }
}

// Inter-chunk recurrence: for zz in [z_begin, z_begin + z_count),
//   out[b, zz - z_begin, h, p, n] = sum_{c' <= zz} exp(Z[zz] - Z[c']) * Sin[b, c', h, p, n]
// with Z = cumsum(0, acs[b, 0, L-1, h], ..., acs[b, c-1, L-1, h]) (Z[0] = 0, summed left to
// right) and Sin[c'] = initial[b, 0, h, p, n] if c' == 0 (zero when has_init == 0) else
// S[b, c'-1, h, p, n]. One thread per output element; the chunk loops are short (c + 1 terms).
extern "C" __global__ void state_passing(const float* __restrict__ S, const float* __restrict__ init,
                                         int has_init, const float* __restrict__ acs,
                                         float* __restrict__ out, int batch, int T, int L, int H,
                                         int P, int N, int nchunks, int z_begin, int z_count) {
    long long total = (long long)batch * z_count * H * P * N;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        long long pn = (long long)P * N;
        long long e = i % pn;  // p * N + n
        int h = (int)((i / pn) % H);
        int zi = (int)((i / (pn * H)) % z_count);
        int bb = (int)(i / (pn * H * z_count));
        int zz = z_begin + zi;
        const float* tot = acs + (long long)bb * T * H + (long long)(L - 1) * H + h;  // chunk cc at tot[cc*L*H]
        float zend = 0.0f;  // Z[zz]
        for (int cc = 0; cc < zz; ++cc) {
            zend += tot[(long long)cc * L * H];
        }
        float acc = 0.0f;
        float zc = 0.0f;  // Z[c']
        for (int cp = 0; cp <= zz; ++cp) {
            float sv;
            if (cp == 0) {
                sv = has_init ? init[((long long)bb * H + h) * pn + e] : 0.0f;
            } else {
                sv = S[(((long long)bb * nchunks + (cp - 1)) * H + h) * pn + e];
            }
            acc += expf(zend - zc) * sv;
            if (cp < nchunks) {
                zc += tot[(long long)cp * L * H];
            }
        }
        out[i] = acc;
    }
}
