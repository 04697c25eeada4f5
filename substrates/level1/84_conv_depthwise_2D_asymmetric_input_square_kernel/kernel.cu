// Direct 2-D convolution (stride, zero padding, dilation, groups), no bias. Input (B, C_in, H, W),
// weight (C_out, C_in / groups, KH, KW), output (B, C_out, H_out, W_out). One thread per output
// element; taps that fall in the zero padding are skipped by the bounds guard.

extern "C" __global__ void conv2d_direct(const float* __restrict__ x, const float* __restrict__ weight,
                                         float* __restrict__ out, long long n, int c_in, int h, int w,
                                         int c_out, int kh, int kw, int h_out, int w_out, int stride_h,
                                         int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // i = ((b * c_out + co) * h_out + oh) * w_out + ow
        int ow = (int)(i % w_out);
        int oh = (int)((i / w_out) % h_out);
        int co = (int)((i / ((long long)w_out * h_out)) % c_out);
        long long b = i / ((long long)w_out * h_out * c_out);
        int cin_g = c_in / groups;
        int cout_g = c_out / groups;
        int g = co / cout_g;

        float acc = 0.0f;
        for (int cl = 0; cl < cin_g; ++cl) {
            int ci = g * cin_g + cl;
            const float* xc = x + (b * c_in + ci) * h * w;
            const float* wc = weight + ((long long)co * cin_g + cl) * kh * kw;
            for (int r = 0; r < kh; ++r) {
                int ih = oh * stride_h - pad_h + r * dil_h;
                for (int s = 0; s < kw; ++s) {
                    int iw = ow * stride_w - pad_w + s * dil_w;
                    float v = (ih >= 0 && ih < h && iw >= 0 && iw < w) ? xc[(long long)ih * w + iw] : 0.0f;
                    acc += v * wc[r * kw + s];
                }
            }
        }
        out[i] = acc;
    }
}
