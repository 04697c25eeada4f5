// Mean over one dimension. x is viewed as (outer, dim, inner); out is (outer, inner).
// A block of (tx, ty) threads covers blockDim.x consecutive inner columns of one outer index
// (coalesced loads); the ty threads of a column split the reduced axis and sum in fp32, and a
// shared-memory tree over ty combines their partial sums before dividing by dim.
extern "C" __global__ void mean_dim(const float* __restrict__ x, float* __restrict__ out,
                                    int dim, long long inner, long long col_tiles) {
    __shared__ float sdata[256];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long o = blockIdx.x / col_tiles;
    long long col = (blockIdx.x % col_tiles) * blockDim.x + tx;
    long long base = o * dim * inner + col;

    float acc = 0.0f;
    if (col < inner) {
        for (int j = ty; j < dim; j += blockDim.y) {
            acc += x[base + j * inner];
        }
    }
    sdata[ty * blockDim.x + tx] = acc;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if (ty < s) sdata[ty * blockDim.x + tx] += sdata[(ty + s) * blockDim.x + tx];
        __syncthreads();
    }
    if (ty == 0 && col < inner) {
        out[o * inner + col] = sdata[tx] / (float)dim;
    }
}
