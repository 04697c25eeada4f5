// 1-D convolution (cross-correlation, as nn.Conv1d), direct form: one thread per output element.
// x (N, C, L), w (OC, C/groups, K), out (N, OC, OL); zero padding, stride, dilation, groups.
// The flat output index is decoded into (n, oc, ol); the thread sums over the in-channels of its
// group and the kernel taps in fp32. bias is read only when has_bias is set.
extern "C" __global__ void conv1d_direct(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ bias, float* __restrict__ out,
                                         long long n_out, int C, int L, int OC, int OL, int K,
                                         int stride, int pad, int dil, int groups, int has_bias) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ol = (int)(i % OL);
        long long t = i / OL;
        int oc = (int)(t % OC);
        long long n = t / OC;
        int cpg = C / groups;
        int ocpg = OC / groups;
        int g = oc / ocpg;
        float acc = has_bias ? bias[oc] : 0.0f;
        for (int icl = 0; icl < cpg; ++icl) {
            long long xbase = (n * C + (long long)g * cpg + icl) * L;
            long long wbase = ((long long)oc * cpg + icl) * K;
            for (int kk = 0; kk < K; ++kk) {
                int il = ol * stride - pad + kk * dil;
                float v = (il >= 0 && il < L) ? x[xbase + il] : 0.0f;
                acc += v * w[wbase + kk];
            }
        }
        out[i] = acc;
    }
}
