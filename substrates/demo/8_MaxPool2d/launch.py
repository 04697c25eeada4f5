BLOCK = 256


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def launch(k, model, x):
    pool = model.pool
    if _pair(pool.dilation) != (1, 1) or pool.ceil_mode or pool.return_indices:
        raise ValueError("max_pool2d handles dilation 1, floor mode, no indices")
    x = x.contiguous()
    batch, channels, h, w = x.shape
    kh, kw = _pair(pool.kernel_size)
    stride_h, stride_w = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    pad_h, pad_w = _pair(pool.padding)
    h_out = (h + 2 * pad_h - kh) // stride_h + 1
    w_out = (w + 2 * pad_w - kw) // stride_w + 1
    out = k.empty(batch, channels, h_out, w_out)
    n = batch * channels * h_out * w_out
    k.max_pool2d(x, out, n, h, w, h_out, w_out, kh, kw, stride_h, stride_w, pad_h, pad_w,
                 grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
