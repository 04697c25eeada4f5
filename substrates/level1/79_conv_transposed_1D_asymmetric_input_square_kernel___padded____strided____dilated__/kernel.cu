// 1-D transposed convolution (stride, padding, output_padding, dilation, groups), no bias, written
// as a gather: one thread per OUTPUT element sums over the taps whose input position is integral
// and in range. Input (B, C_in, L), weight (C_in, C_out / groups, K), output (B, C_out, L_out).
// Forward relation: o = i * stride - pad + tap * dilation.

extern "C" __global__ void conv_transpose1d_gather(const float* __restrict__ x, const float* __restrict__ weight,
                                                   float* __restrict__ out, long long n, int c_in, int length,
                                                   int c_out, int ksize, int l_out, int stride, int pad,
                                                   int dilation, int groups) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // i = (b * c_out + co) * l_out + ol
        int ol = (int)(i % l_out);
        int co = (int)((i / l_out) % c_out);
        long long b = i / ((long long)l_out * c_out);
        int cin_g = c_in / groups;
        int cout_g = c_out / groups;
        int g = co / cout_g;
        int col = co - g * cout_g;

        float acc = 0.0f;
        for (int t = 0; t < ksize; ++t) {
            int tl = ol + pad - t * dilation;
            if (tl < 0 || tl % stride != 0) continue;
            int il = tl / stride;
            if (il >= length) continue;
            for (int cl = 0; cl < cin_g; ++cl) {
                int ci = g * cin_g + cl;
                acc += x[(b * c_in + ci) * length + il] * weight[((long long)ci * cout_g + col) * ksize + t];
            }
        }
        out[i] = acc;
    }
}
