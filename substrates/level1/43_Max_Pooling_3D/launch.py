BLOCK = 256


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def _out_size(size, kernel, stride, pad, dilation, ceil_mode):
    # PyTorch's pooling_output_shape
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def launch(k, model, x):
    pool = model.maxpool
    kd, kh, kw = _triple(pool.kernel_size)
    sd, sh, sw = _triple(pool.stride)
    pd, ph, pw = _triple(pool.padding)
    dd, dh, dw = _triple(pool.dilation)
    x = x.contiguous()
    in_d, in_h, in_w = x.shape[-3], x.shape[-2], x.shape[-1]
    out_d = _out_size(in_d, kd, sd, pd, dd, pool.ceil_mode)
    out_h = _out_size(in_h, kh, sh, ph, dh, pool.ceil_mode)
    out_w = _out_size(in_w, kw, sw, pw, dw, pool.ceil_mode)
    y = k.empty(*x.shape[:-3], out_d, out_h, out_w, dtype=x.dtype)
    n_out = y.numel()
    k.max_pool3d(x, y, n_out, in_d, in_h, in_w, out_d, out_h, out_w, kd, kh, kw, sd, sh, sw,
                 pd, ph, pw, dd, dh, dw, grid=k.cdiv(n_out, BLOCK), block=BLOCK)
    return y
