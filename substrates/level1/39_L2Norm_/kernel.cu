// L2 normalisation over dim 1: x / sqrt(sum of x^2) along it. x is viewed as (outer, dim, inner).
// A block of (tx, ty) threads covers blockDim.x consecutive inner columns of one outer index;
// the ty threads of a column split the dim axis, sum x^2 in fp32, and a shared-memory tree over
// ty combines them; then every thread of the column writes its share of x / norm.
extern "C" __global__ void l2_norm(const float* __restrict__ x, float* __restrict__ y,
                                   int dim, long long inner, long long col_tiles) {
    __shared__ float sdata[256];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long o = blockIdx.x / col_tiles;
    long long col = (blockIdx.x % col_tiles) * blockDim.x + tx;
    long long base = o * dim * inner + col;
    bool valid = col < inner;

    float acc = 0.0f;
    if (valid) {
        for (int j = ty; j < dim; j += blockDim.y) {
            float v = x[base + j * inner];
            acc += v * v;
        }
    }
    sdata[ty * blockDim.x + tx] = acc;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (ty < s) sdata[ty * blockDim.x + tx] += sdata[(ty + s) * blockDim.x + tx];
        __syncthreads();
    }
    float norm = sqrtf(sdata[tx]);

    if (valid) {
        for (int j = ty; j < dim; j += blockDim.y) {
            y[base + j * inner] = x[base + j * inner] / norm;
        }
    }
}
