BLOCK = 256      # threads per block; matches the kernels' shared arrays
ITEMS = 16       # elements per thread in one partial-sum block
MAX_PARTS = 1024 # most chunks one plane is split into


def launch(k, model, x):
    bn = model.bn
    x = x.contiguous()
    batch, channels = x.shape[0], x.shape[1]
    n = x.numel()
    plane_len = n // (batch * channels)
    planes = batch * channels
    parts = min(k.cdiv(plane_len, BLOCK * ITEMS), MAX_PARTS)
    chunk = k.cdiv(plane_len, parts)
    count = batch * plane_len

    partial = k.empty(planes * parts)
    mean = k.empty(channels)
    invstd = k.empty(channels)
    y = k.empty_like(x)

    k.plane_partial_sum(x, partial, plane_len, parts, chunk, grid=planes * parts, block=BLOCK)
    k.channel_mean(partial, mean, batch, channels, parts, count, grid=channels, block=BLOCK)
    k.plane_partial_sqdev(x, mean, partial, plane_len, channels, parts, chunk,
                          grid=planes * parts, block=BLOCK)
    k.channel_invstd(partial, invstd, batch, channels, parts, count, bn.eps, grid=channels, block=BLOCK)
    k.batch_norm_apply(x, mean, invstd, bn.weight, bn.bias, y, n, channels, plane_len,
                       grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y
