// 2-D max pooling (dilation 1, floor mode) over NCHW input. One thread per output element.
// Padding never wins: taps outside the input are skipped, and the max is seeded with -INFINITY.
// Like torch, a NaN in the window propagates (fmaxf would drop it).

extern "C" __global__ void max_pool2d(const float* __restrict__ x, float* __restrict__ out,
                                      long long n, int h, int w, int h_out, int w_out,
                                      int kh, int kw, int stride_h, int stride_w,
                                      int pad_h, int pad_w) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // i = (plane * h_out + oh) * w_out + ow, plane = b * channels + c
        int ow = (int)(i % w_out);
        int oh = (int)((i / w_out) % h_out);
        long long plane = i / ((long long)w_out * h_out);
        const float* xp = x + plane * h * w;

        float m = -INFINITY;
        for (int r = 0; r < kh; ++r) {
            int ih = oh * stride_h - pad_h + r;
            for (int s = 0; s < kw; ++s) {
                int iw = ow * stride_w - pad_w + s;
                if (ih >= 0 && ih < h && iw >= 0 && iw < w) {
                    float v = xp[(long long)ih * w + iw];
                    if (v > m || isnan(v)) m = v;
                }
            }
        }
        out[i] = m;
    }
}
