// ConvTranspose2d (gather), global average pool + bias (one block per (n, c)),
// then LogSumExp over channels, the (trivial) spatial sum and * 10 (one block per sample).

extern "C" __global__ void conv_transpose2d(const float* __restrict__ x, const float* __restrict__ w,
                                            const float* __restrict__ b, float* __restrict__ y, int N,
                                            int Cin, int H, int W, int Cout, int OH, int OW, int KH, int KW,
                                            int sh, int sw, int ph, int pw, int dh, int dw, int groups,
                                            long long total) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int co = (int)((i / ((long long)OW * OH)) % Cout);
        int n = (int)(i / ((long long)OW * OH * Cout));
        int cin_g = Cin / groups;
        int cout_g = Cout / groups;
        int g = co / cout_g;
        int cl = co - g * cout_g;
        float acc = 0.0f;
        for (int kh = 0; kh < KH; ++kh) {
            int th = oh + ph - kh * dh;
            if (th < 0 || th % sh != 0) continue;
            int ih = th / sh;
            if (ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int tw = ow + pw - kw * dw;
                if (tw < 0 || tw % sw != 0) continue;
                int iw = tw / sw;
                if (iw >= W) continue;
                for (int ci = 0; ci < cin_g; ++ci) {
                    int c = g * cin_g + ci;
                    float xv = x[(((long long)n * Cin + c) * H + ih) * W + iw];
                    float wv = w[(((long long)c * cout_g + cl) * KH + kh) * KW + kw];
                    acc += xv * wv;
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// one block per (n, c): mean over the S spatial elements, + bias[c]
extern "C" __global__ void spatial_mean_bias(const float* __restrict__ y, const float* __restrict__ bias,
                                             float* __restrict__ m, int C, long long S) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    long long row = blockIdx.x;
    const float* p = y + row * S;
    float acc = 0.0f;
    for (long long j = tid; j < S; j += blockDim.x) {
        acc += p[j];
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        int c = (int)(row % C);
        m[row] = sdata[0] / (float)S + bias[c];
    }
}

// one block per sample: logsumexp over the C channel means, times 10
extern "C" __global__ void logsumexp_channels_mul(
        const float* __restrict__ m, float* __restrict__ out, int C) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    long long n = blockIdx.x;
    const float* p = m + n * C;

    float mx = -INFINITY;
    for (int c = tid; c < C; c += blockDim.x) {
        mx = fmaxf(mx, p[c]);
    }
    sdata[tid] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmaxf(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    float rmax = sdata[0];
    __syncthreads();

    float acc = 0.0f;
    for (int c = tid; c < C; c += blockDim.x) {
        acc += expf(p[c] - rmax);
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        float lse = rmax + logf(sdata[0]);
        out[n] = lse * 10.0f;
    }
}
