BLOCK = 256      # threads per block; matches the kernels' shared arrays
ITEMS = 16       # elements per thread in one partial-sum block
MAX_PARTS = 1024 # most chunks one segment is split into


def launch(k, model, x):
    gn = model.gn
    x = x.contiguous()
    batch, channels = x.shape[0], x.shape[1]
    groups = gn.num_groups
    n = x.numel()
    plane_len = n // (batch * channels)
    seg_len = (channels // groups) * plane_len
    segments = batch * groups
    parts = min(k.cdiv(seg_len, BLOCK * ITEMS), MAX_PARTS)
    chunk = k.cdiv(seg_len, parts)

    partial = k.empty(segments * parts)
    mean = k.empty(segments)
    invstd = k.empty(segments)
    y = k.empty_like(x)

    k.segment_partial_sum(x, partial, seg_len, parts, chunk, grid=segments * parts, block=BLOCK)
    k.segment_mean(partial, mean, parts, seg_len, grid=segments, block=BLOCK)
    k.segment_partial_sqdev(x, mean, partial, seg_len, parts, chunk, grid=segments * parts, block=BLOCK)
    k.segment_invstd(partial, invstd, parts, seg_len, gn.eps, grid=segments, block=BLOCK)
    k.group_norm_apply(x, mean, invstd, gn.weight, gn.bias, y, n, channels, plane_len, seg_len,
                       grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y
