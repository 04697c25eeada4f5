BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    x = x.contiguous()
    dim = model.dim % x.dim()
    length = x.shape[dim]
    outer = 1
    for s in x.shape[:dim]:
        outer *= s
    inner = 1
    for s in x.shape[dim + 1:]:
        inner *= s
    rows = outer * inner
    out = k.empty_like(x)
    k.cumsum_scan(x, out, rows, length, inner, grid=rows, block=BLOCK)
    return out
