TILE = 32
ROW_BLOCK = 256


def launch(k, model, x):
    lin = model.linear
    x = x.contiguous()
    m, kdim = x.shape
    n = lin.weight.shape[0]
    has_bias = lin.bias is not None
    bias = lin.bias if has_bias else lin.weight  # never read when has_bias is 0
    y = k.empty(m, n, dtype=x.dtype)
    k.linear(x, lin.weight, bias, y, m, n, kdim, int(has_bias),
             grid=(k.cdiv(n, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))

    out = k.empty(m, 1, dtype=x.dtype)
    k.row_lse_leaky2_gelu2(y, out, n, grid=m, block=ROW_BLOCK)
    return out
