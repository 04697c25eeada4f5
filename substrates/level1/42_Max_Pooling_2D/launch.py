BLOCK = 256


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _out_size(size, kernel, stride, pad, dilation, ceil_mode):
    # PyTorch's pooling_output_shape
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def launch(k, model, x):
    pool = model.maxpool
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride)
    ph, pw = _pair(pool.padding)
    dh, dw = _pair(pool.dilation)
    x = x.contiguous()
    in_h, in_w = x.shape[-2], x.shape[-1]
    out_h = _out_size(in_h, kh, sh, ph, dh, pool.ceil_mode)
    out_w = _out_size(in_w, kw, sw, pw, dw, pool.ceil_mode)
    y = k.empty(*x.shape[:-2], out_h, out_w, dtype=x.dtype)
    n_out = y.numel()
    k.max_pool2d(x, y, n_out, in_h, in_w, out_h, out_w, kh, kw, sh, sw, ph, pw, dh, dw,
                 grid=k.cdiv(n_out, BLOCK), block=BLOCK)
    return y
