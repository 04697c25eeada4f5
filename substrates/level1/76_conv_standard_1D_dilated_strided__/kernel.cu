// Direct 1-D convolution (stride, zero padding, dilation, groups), no bias. Input (B, C_in, L),
// weight (C_out, C_in / groups, K), output (B, C_out, L_out). One thread per output element;
// taps that fall in the zero padding are skipped by the bounds guard.

extern "C" __global__ void conv1d_direct(const float* __restrict__ x, const float* __restrict__ weight,
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

        float acc = 0.0f;
        for (int cl = 0; cl < cin_g; ++cl) {
            int ci = g * cin_g + cl;
            const float* xc = x + (b * c_in + ci) * length;
            const float* wc = weight + ((long long)co * cin_g + cl) * ksize;
            for (int t = 0; t < ksize; ++t) {
                int il = ol * stride - pad + t * dilation;
                float v = (il >= 0 && il < length) ? xc[il] : 0.0f;
                acc += v * wc[t];
            }
        }
        out[i] = acc;
    }
}
