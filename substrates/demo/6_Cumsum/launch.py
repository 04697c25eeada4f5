BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    if model.dim % x.dim() != 1 or x.dim() != 2:
        raise ValueError("cumsum_rows scans dim 1 of a 2-D tensor")
    x = x.contiguous()
    rows, cols = x.shape
    out = k.empty_like(x)
    k.cumsum_rows(x, out, rows, cols, grid=rows, block=BLOCK)
    return out
