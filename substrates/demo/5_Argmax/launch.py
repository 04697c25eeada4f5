import torch  # for the output dtype only

BLOCK = 256


def launch(k, model, x):
    x = x.contiguous()
    dim = model.dim % x.dim()
    outer = 1
    for d in x.shape[:dim]:
        outer *= d
    inner = 1
    for d in x.shape[dim + 1:]:
        inner *= d
    reduce = x.shape[dim]
    out_shape = tuple(x.shape[:dim]) + tuple(x.shape[dim + 1:])
    out = k.empty(*out_shape, dtype=torch.int64)
    n = outer * inner
    k.argmax_mid(x, out, n, reduce, inner, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
