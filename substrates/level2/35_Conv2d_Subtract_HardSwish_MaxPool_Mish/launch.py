BLOCK = 256


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def launch(k, model, x):
    conv = model.conv
    x = x.contiguous()
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    total = n * cout * oh * ow
    k.conv2d_sub_hardswish(x, conv.weight, conv.bias, y, n, cin, h, w, cout, oh, ow, kh, kw,
                           sh, sw, ph, pw, dh, dw, conv.groups, float(model.subtract_value), total,
                           grid=k.cdiv(total, BLOCK), block=BLOCK)

    pool = model.pool
    pkh, pkw = _pair(pool.kernel_size)
    psh, psw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    pph, ppw = _pair(pool.padding)
    pdh, pdw = _pair(pool.dilation)
    out_h = (oh + 2 * pph - pdh * (pkh - 1) - 1) // psh + 1
    out_w = (ow + 2 * ppw - pdw * (pkw - 1) - 1) // psw + 1
    out = k.empty(n, cout, out_h, out_w, dtype=x.dtype)
    total = n * cout * out_h * out_w
    k.maxpool2d_mish(y, out, oh, ow, out_h, out_w, pkh, pkw, psh, psw, pph, ppw, pdh, pdw, total,
                     grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out
