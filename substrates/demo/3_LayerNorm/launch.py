BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    x = x.contiguous()
    ln = model.ln
    cols = 1
    for d in ln.normalized_shape:
        cols *= d
    rows = x.numel() // cols
    out = k.empty_like(x)
    k.layer_norm_rows(x, ln.weight.contiguous(), ln.bias.contiguous(), out, rows, cols, ln.eps,
                      grid=rows, block=BLOCK)
    return out
