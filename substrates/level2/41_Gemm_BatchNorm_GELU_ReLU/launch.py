TILE = 32
RED = 32
BLOCK = 256


def launch(k, model, x):
    lin = model.gemm
    x = x.contiguous()
    m, kdim = x.shape
    n = lin.weight.shape[0]
    y = k.empty(m, n, dtype=x.dtype)
    k.linear(x, lin.weight, lin.bias, y, m, n, kdim,
             grid=(k.cdiv(n, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))

    bn = model.batch_norm
    mean = k.empty(n, dtype=x.dtype)
    rstd = k.empty(n, dtype=x.dtype)
    k.bn_col_stats(y, mean, rstd, m, n, float(bn.eps), grid=k.cdiv(n, RED), block=(RED, RED))

    out = k.empty(m, n, dtype=x.dtype)
    total = m * n
    k.bn_gelu_relu(y, mean, rstd, bn.weight, bn.bias, out, n, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out
