BLOCK = 256
TILE = 16  # matches TILE in kernel.cu
RED_BLOCK = 512  # matches RED_BLOCK
SM_BLOCK = 64  # matches SM_BLOCK
NORM_BLOCK = 256  # matches NORM_BLOCK
NORMALIZE_EPS = 1e-12  # F.normalize's default eps


def batch_norm1d(k, bn, y):
    """nn.BatchNorm1d on (rows, C) as its forward uses it: batch statistics in training mode (or
    without running stats), the running statistics in eval mode."""
    rows, c = y.shape
    if bn.training or bn.running_mean is None or bn.running_var is None:
        mean = k.empty(c, dtype=y.dtype)
        var = k.empty(c, dtype=y.dtype)
        k.bn1d_stats(y, mean, var, rows, c, grid=c, block=RED_BLOCK)
    else:
        mean, var = bn.running_mean, bn.running_var
    out = k.empty_like(y)
    total = y.numel()
    k.bn1d_apply(y, mean, var, bn.weight, bn.bias, out, c, total, float(bn.eps),
                 grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out


def l2_normalize(k, x, outer, length, inner):
    """F.normalize (p=2, default eps) along the middle axis of x viewed as (outer, length, inner)."""
    out = k.empty_like(x)
    rows = outer * inner
    k.l2_normalize_rows(x, out, rows, length, inner, NORMALIZE_EPS, grid=rows, block=NORM_BLOCK)
    return out


def launch(k, model, x):
    x = x.contiguous()
    b, n, d = x.shape
    kc = model.cluster_size
    if d != model.feature_size:
        raise ValueError("x's last dim must be feature_size")
    clusters = model.clusters.contiguous()  # (D, K + G)
    kg = clusters.shape[1]
    c2 = model.clusters2.contiguous()  # (1, D, K)
    rows = b * n
    x2 = x.view(rows, d)

    assignment = k.empty(rows, kg, dtype=x.dtype)
    k.matmul_nn(x2, clusters, assignment, rows, kg, d,
                grid=(k.cdiv(rows, TILE), k.cdiv(kg, TILE)), block=(TILE, TILE))
    assignment = batch_norm1d(k, model.batch_norm, assignment)

    # softmax over all K + G clusters, the ghost columns dropped on the way out
    soft = k.empty(rows, kc, dtype=x.dtype)
    k.softmax_rows_head(assignment, soft, rows, kg, kc, grid=rows, block=SM_BLOCK)

    a_sum = k.empty(b, kc, dtype=x.dtype)
    total = b * kc
    k.sum_over_samples(soft, a_sum, n, kc, total, grid=k.cdiv(total, BLOCK), block=BLOCK)

    vlad = k.empty(b, d, kc, dtype=x.dtype)
    k.vlad_aggregate(soft, x, a_sum, c2, vlad, n, d, kc,
                     grid=(k.cdiv(kc, TILE), k.cdiv(d, TILE), b), block=(TILE, TILE))

    vlad = l2_normalize(k, vlad, b, d, kc)          # intra-normalisation over D (dim 1)
    flat = vlad.view(b, d * kc)
    out = l2_normalize(k, flat, b, d * kc, 1)        # the flattened row
    return out
