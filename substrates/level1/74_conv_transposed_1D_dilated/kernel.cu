// 1-D transposed convolution (as nn.ConvTranspose1d) written as a gather: one thread per OUTPUT
// element. x (N, C, L), w (C, OC/groups, K), out (N, OC, OL). Input position il feeds output
// ol through tap kk when ol = il * stride - pad + kk * dil, so for each tap the thread takes
// t = ol + pad - kk * dil and uses il = t / stride only if t >= 0, t divides by stride and il < L.
// fp32 accumulation over the taps and the in-channels of the group; bias only when has_bias.
extern "C" __global__ void conv_transpose1d_gather(const float* __restrict__ x,
                                                   const float* __restrict__ w,
                                                   const float* __restrict__ bias,
                                                   float* __restrict__ out, long long n_out,
                                                   int C, int L, int OC, int OL, int K,
                                                   int stride, int pad, int dil, int groups,
                                                   int has_bias) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ol = (int)(i % OL);
        long long t = i / OL;
        int oc = (int)(t % OC);
        long long n = t / OC;
        int cpg = C / groups;
        int ocpg = OC / groups;
        int g = oc / ocpg;
        int ocl = oc - g * ocpg;
        float acc = has_bias ? bias[oc] : 0.0f;
        for (int kk = 0; kk < K; ++kk) {
            int tl = ol + pad - kk * dil;
            int il = tl / stride;
            if (tl >= 0 && tl % stride == 0 && il < L) {
                for (int icl = 0; icl < cpg; ++icl) {
                    int ic = g * cpg + icl;
                    float v = x[(n * C + ic) * L + il];
                    acc += v * w[((long long)ic * ocpg + ocl) * K + kk];
                }
            }
        }
        out[i] = acc;
    }
}
