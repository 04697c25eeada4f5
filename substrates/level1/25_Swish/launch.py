BLOCK = 256


def launch(k, model, x):
    x = x.contiguous()
    out = k.empty_like(x)
    n = x.numel()
    k.swish(x, out, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
