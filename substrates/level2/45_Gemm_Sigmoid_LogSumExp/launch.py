TILE = 32
ROW_BLOCK = 256


def launch(k, model, x):
    x = x.contiguous()
    m, kdim = x.shape
    l1, l2 = model.linear1, model.linear2
    hidden = l1.weight.shape[0]
    h = k.empty(m, hidden, dtype=x.dtype)
    k.linear_sigmoid(x, l1.weight, l1.bias, h, m, hidden, kdim,
                     grid=(k.cdiv(hidden, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))

    n = l2.weight.shape[0]
    z = k.empty(m, n, dtype=x.dtype)
    k.linear(h, l2.weight, l2.bias, z, m, n, hidden,
             grid=(k.cdiv(n, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))

    out = k.empty(m, dtype=x.dtype)
    k.row_logsumexp(z, out, n, grid=m, block=ROW_BLOCK)
    return out
