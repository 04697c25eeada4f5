// LogSoftmax over model.dim: x - max - log(sum(exp(x - max))).
// x is viewed as (outer, len, inner): element j of row r = o * inner + i sits at
// (o * len + j) * inner + i (inner = 1 when the reduced dim is the last one).
// One block per row, three passes over it: the row max (a -INFINITY-seeded fmaxf tree), the sum of
// expf(x - max) (a shared-memory tree), then the normalised output.
#define BLOCK 512

extern "C" __global__ void log_softmax_rows(const float* __restrict__ x, float* __restrict__ out,
                                            long long rows, int len, long long inner) {
    __shared__ float sdata[BLOCK];
    long long r = blockIdx.x;
    long long o = r / inner;
    long long i = r % inner;
    long long base = o * len * inner + i;
    float m = -INFINITY;
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            m = fmaxf(m, x[base + (long long)j * inner]);
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
            acc += expf(x[base + (long long)j * inner] - rowmax);
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float logsum = logf(sdata[0]);
    if (r < rows) {
        for (int j = threadIdx.x; j < len; j += blockDim.x) {
            long long idx = base + (long long)j * inner;
            out[idx] = x[idx] - rowmax - logsum;
        }
    }
}
