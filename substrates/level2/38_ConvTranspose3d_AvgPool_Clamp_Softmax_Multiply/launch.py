BLOCK = 256
ROW_BLOCK = 256


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def launch(k, model, x):
    x = x.contiguous()
    n, cin, d, h, w = x.shape

    pool = model.avg_pool
    pkd, pkh, pkw = _triple(pool.kernel_size)
    psd, psh, psw = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    ppd, pph, ppw = _triple(pool.padding)
    pd_ = (d + 2 * ppd - pkd) // psd + 1
    ph_ = (h + 2 * pph - pkh) // psh + 1
    pw_ = (w + 2 * ppw - pkw) // psw + 1
    xp = k.empty(n, cin, pd_, ph_, pw_, dtype=x.dtype)
    total = n * cin * pd_ * ph_ * pw_
    k.avg_pool3d(x, xp, d, h, w, pd_, ph_, pw_, pkd, pkh, pkw, psd, psh, psw, ppd, pph, ppw, total,
                 grid=k.cdiv(total, BLOCK), block=BLOCK)

    ct = model.conv_transpose
    _, cout_g, kd, kh, kw = ct.weight.shape
    cout = cout_g * ct.groups
    sd, sh, sw = _triple(ct.stride)
    pad_d, pad_h, pad_w = _triple(ct.padding)
    dd, dh, dw = _triple(ct.dilation)
    opd, oph, opw = _triple(ct.output_padding)
    od = (pd_ - 1) * sd - 2 * pad_d + dd * (kd - 1) + opd + 1
    oh = (ph_ - 1) * sh - 2 * pad_h + dh * (kh - 1) + oph + 1
    ow = (pw_ - 1) * sw - 2 * pad_w + dw * (kw - 1) + opw + 1
    y = k.empty(n, cout, od, oh, ow, dtype=x.dtype)
    total = n * cout * od * oh * ow
    k.conv_transpose3d_clamp(xp, ct.weight, ct.bias, y, n, cin, pd_, ph_, pw_, cout, od, oh, ow,
                             kd, kh, kw, sd, sh, sw, pad_d, pad_h, pad_w, dd, dh, dw, ct.groups,
                             float(model.clamp_min), float(model.clamp_max), total,
                             grid=k.cdiv(total, BLOCK), block=BLOCK)

    out = k.empty(n, cout, od, oh, ow, dtype=x.dtype)
    k.softmax_rows_scale(y, model.scale, out, cout, od * oh * ow, grid=n * cout, block=ROW_BLOCK)
    return out
