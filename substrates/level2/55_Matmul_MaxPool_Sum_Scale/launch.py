TILE = 32
ROW_BLOCK = 256


def _single(v):
    return v[0] if isinstance(v, (tuple, list)) else v


def launch(k, model, x):
    lin = model.matmul
    x = x.contiguous()
    m, kdim = x.shape
    n = lin.weight.shape[0]
    y = k.empty(m, n, dtype=x.dtype)
    k.linear(x, lin.weight, lin.bias, y, m, n, kdim,
             grid=(k.cdiv(n, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))

    pool = model.max_pool
    ks = _single(pool.kernel_size)
    st = _single(pool.stride if pool.stride is not None else pool.kernel_size)
    pad = _single(pool.padding)
    dil = _single(pool.dilation)
    p = (n + 2 * pad - dil * (ks - 1) - 1) // st + 1
    out = k.empty(m, dtype=x.dtype)
    k.row_maxpool_sum_scale(y, out, n, p, ks, st, pad, dil, float(model.scale_factor),
                            grid=m, block=ROW_BLOCK)
    return out
