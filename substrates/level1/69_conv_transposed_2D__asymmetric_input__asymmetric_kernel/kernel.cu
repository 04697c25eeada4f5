// 2-D transposed convolution (as nn.ConvTranspose2d) written as a gather: one thread per OUTPUT
// element. x (N, C, H, W), w (C, OC/groups, KH, KW), out (N, OC, OH, OW). Input row ih feeds
// output row oh through tap kh when oh = ih * stride_h - pad_h + kh * dil_h, so for each tap the
// thread takes th = oh + pad_h - kh * dil_h and uses ih = th / stride_h only if th >= 0, th
// divides by stride_h and ih < H (likewise for columns). fp32 accumulation over the taps and the
// in-channels of the group; bias only when has_bias.
extern "C" __global__ void conv_transpose2d_gather(const float* __restrict__ x,
                                                   const float* __restrict__ w,
                                                   const float* __restrict__ bias,
                                                   float* __restrict__ out, long long n_out,
                                                   int C, int H, int W, int OC, int OH, int OW,
                                                   int KH, int KW, int stride_h, int stride_w,
                                                   int pad_h, int pad_w, int dil_h, int dil_w,
                                                   int groups, int has_bias) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ow = (int)(i % OW);
        long long t = i / OW;
        int oh = (int)(t % OH);
        t = t / OH;
        int oc = (int)(t % OC);
        long long n = t / OC;
        int cpg = C / groups;
        int ocpg = OC / groups;
        int g = oc / ocpg;
        int ocl = oc - g * ocpg;
        float acc = has_bias ? bias[oc] : 0.0f;
        for (int kh = 0; kh < KH; ++kh) {
            int th = oh + pad_h - kh * dil_h;
            int ih = th / stride_h;
            if (th >= 0 && th % stride_h == 0 && ih < H) {
                for (int kw = 0; kw < KW; ++kw) {
                    int tw = ow + pad_w - kw * dil_w;
                    int iw = tw / stride_w;
                    if (tw >= 0 && tw % stride_w == 0 && iw < W) {
                        for (int icl = 0; icl < cpg; ++icl) {
                            int ic = g * cpg + icl;
                            float v = x[((n * C + ic) * H + ih) * W + iw];
                            acc += v * w[(((long long)ic * ocpg + ocl) * KH + kh) * KW + kw];
                        }
                    }
                }
            }
        }
        out[i] = acc;
    }
}
