#define TILE 16

// Pointwise convolution: for each batch b, out[b] (C_out, HW) = weight (C_out, C_in) @ x[b] (C_in, HW).
// Shared-memory tiles of TILE x TILE; block (TILE, TILE), grid (HW tiles, C_out tiles, B).
// Edge tiles are zero-filled.
extern "C" __global__ void pointwise_conv_tiled(const float* __restrict__ x, const float* __restrict__ weight,
                                                float* __restrict__ out, int c_in, int c_out, long long hw) {
    __shared__ float Ws[TILE][TILE];
    __shared__ float Xs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long b = blockIdx.z;
    int row = blockIdx.y * TILE + ty;                    // output channel
    long long col = (long long)blockIdx.x * TILE + tx;   // spatial position
    const float* xb = x + b * c_in * hw;

    float acc = 0.0f;
    for (int t = 0; t < (c_in + TILE - 1) / TILE; ++t) {
        // threads outside the output still load, so every tile is complete for the others
        Ws[ty][tx] = (row < c_out && t * TILE + tx < c_in) ? weight[(long long)row * c_in + t * TILE + tx] : 0.0f;
        Xs[ty][tx] = (t * TILE + ty < c_in && col < hw) ? xb[(long long)(t * TILE + ty) * hw + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; ++j) {
            acc += Ws[ty][j] * Xs[j][tx];
        }
        __syncthreads();  // the tile is used up before the next load overwrites it
    }
    if (row < c_out && col < hw) {
        out[(b * c_out + row) * hw + col] = acc;
    }
}
