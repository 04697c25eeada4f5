// RMSNorm over dim 1 of (N, C, *): one thread per (n, position); it sums x^2 over the C features
// (stride plane_len, coalesced across threads), then writes x / sqrt(mean + eps).
extern "C" __global__ void rms_norm(const float* __restrict__ x, float* __restrict__ y,
                                    long long positions, int channels, long long plane_len, float eps) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < positions) {
        long long b = i / plane_len;
        long long p = i % plane_len;
        long long base = b * channels * plane_len + p;
        float acc = 0.0f;
        for (int c = 0; c < channels; c++) {
            float v = x[base + c * plane_len];
            acc += v * v;
        }
        float rms = sqrtf(acc / (float)channels + eps);
        for (int c = 0; c < channels; c++) {
            y[base + c * plane_len] = x[base + c * plane_len] / rms;
        }
    }
}
