BLOCK = 256


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _out_size(size, kernel, stride, pad, ceil_mode):
    # PyTorch's pooling_output_shape (dilation 1)
    span = size + 2 * pad - kernel
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def launch(k, model, x):
    pool = model.avg_pool
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride)
    ph, pw = _pair(pool.padding)
    divisor_override = pool.divisor_override or 0
    x = x.contiguous()
    in_h, in_w = x.shape[-2], x.shape[-1]
    out_h = _out_size(in_h, kh, sh, ph, pool.ceil_mode)
    out_w = _out_size(in_w, kw, sw, pw, pool.ceil_mode)
    y = k.empty(*x.shape[:-2], out_h, out_w, dtype=x.dtype)
    n_out = y.numel()
    k.avg_pool2d(x, y, n_out, in_h, in_w, out_h, out_w, kh, kw, sh, sw, ph, pw,
                 int(pool.count_include_pad), divisor_override, grid=k.cdiv(n_out, BLOCK), block=BLOCK)
    return y
