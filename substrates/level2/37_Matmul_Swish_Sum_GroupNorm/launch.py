TILE = 32
GN_BLOCK_MAX = 256


def launch(k, model, x):
    lin = model.matmul
    x = x.contiguous()
    m, kdim = x.shape
    n = lin.weight.shape[0]
    y = k.empty(m, n, dtype=x.dtype)
    k.linear_swish_bias(x, lin.weight, lin.bias, model.bias, y, m, n, kdim,
                        grid=(k.cdiv(n, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))

    gn = model.group_norm
    groups = gn.num_groups
    gsize = n // groups
    block = 32
    while block < gsize and block < GN_BLOCK_MAX:
        block *= 2
    out = k.empty(m, n, dtype=x.dtype)
    k.group_norm(y, gn.weight, gn.bias, out, n, groups, 1, float(gn.eps),
                 grid=m * groups, block=block)
    return out
