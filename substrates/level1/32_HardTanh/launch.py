BLOCK = 256
# the reference's forward passes these bounds as literals (the module has no attributes)
MIN_VAL = -1.0
MAX_VAL = 1.0


def launch(k, model, x):
    x = x.contiguous()
    out = k.empty_like(x)
    n = x.numel()
    k.hardtanh(x, out, n, MIN_VAL, MAX_VAL, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
