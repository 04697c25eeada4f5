// 2-D transposed convolution (stride, padding, output_padding, dilation, groups), no bias, written
// as a gather: one thread per OUTPUT element sums over the taps whose input position is integral
// and in range. Input (B, C_in, H, W), weight (C_in, C_out / groups, KH, KW), output
// (B, C_out, H_out, W_out). Forward relation: o = i * stride - pad + tap * dilation.

extern "C" __global__ void conv_transpose2d_gather(const float* __restrict__ x, const float* __restrict__ weight,
                                                   float* __restrict__ out, long long n, int c_in, int h, int w,
                                                   int c_out, int kh, int kw, int h_out, int w_out, int stride_h,
                                                   int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
                                                   int groups) {
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
        int col = co - g * cout_g;
        long long in_plane = (long long)h * w;
        int w_taps = kh * kw;

        float acc = 0.0f;
        for (int r = 0; r < kh; ++r) {
            int th = oh + pad_h - r * dil_h;
            if (th < 0 || th % stride_h != 0) continue;
            int ih = th / stride_h;
            if (ih >= h) continue;
            for (int s = 0; s < kw; ++s) {
                int tw = ow + pad_w - s * dil_w;
                if (tw < 0 || tw % stride_w != 0) continue;
                int iw = tw / stride_w;
                if (iw >= w) continue;
                long long x_off = (long long)ih * w + iw;
                int tap = r * kw + s;
                for (int cl = 0; cl < cin_g; ++cl) {
                    int ci = g * cin_g + cl;
                    acc += x[(b * c_in + ci) * in_plane + x_off] * weight[((long long)ci * cout_g + col) * w_taps + tap];
                }
            }
        }
        out[i] = acc;
    }
}
