BLOCK = 256


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def _out_size(size, kernel, stride, pad, ceil_mode):
    # PyTorch's pooling_output_shape (dilation 1)
    span = size + 2 * pad - kernel
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def launch(k, model, x):
    pool = model.avg_pool
    kd, kh, kw = _triple(pool.kernel_size)
    sd, sh, sw = _triple(pool.stride)
    pd, ph, pw = _triple(pool.padding)
    divisor_override = pool.divisor_override or 0
    x = x.contiguous()
    in_d, in_h, in_w = x.shape[-3], x.shape[-2], x.shape[-1]
    out_d = _out_size(in_d, kd, sd, pd, pool.ceil_mode)
    out_h = _out_size(in_h, kh, sh, ph, pool.ceil_mode)
    out_w = _out_size(in_w, kw, sw, pw, pool.ceil_mode)
    y = k.empty(*x.shape[:-3], out_d, out_h, out_w, dtype=x.dtype)
    n_out = y.numel()
    k.avg_pool3d(x, y, n_out, in_d, in_h, in_w, out_d, out_h, out_w, kd, kh, kw, sd, sh, sw,
                 pd, ph, pw, int(pool.count_include_pad), divisor_override,
                 grid=k.cdiv(n_out, BLOCK), block=BLOCK)
    return y
