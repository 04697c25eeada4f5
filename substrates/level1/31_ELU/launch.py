BLOCK = 256


def launch(k, model, x):
    x = x.contiguous()
    out = k.empty_like(x)
    n = x.numel()
    k.elu(x, out, n, model.alpha, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
