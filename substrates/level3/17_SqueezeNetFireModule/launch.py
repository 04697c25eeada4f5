TILE = 32  # matches TILE in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x, y, c_off, apply_relu):
    """nn.Conv2d with bias (groups 1) as a tiled implicit GEMM, written into channels
    [c_off, c_off + C_out) of y; the following ReLU fused when apply_relu is 1."""
    if conv.groups != 1 or conv.bias is None or conv.padding_mode != "zeros":
        raise ValueError("conv2d_igemm handles groups=1, zero padding, with a bias only")
    if isinstance(conv.padding, str):
        raise ValueError("conv2d_igemm needs numeric padding")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if tuple(y.shape) != (n, y.shape[1], oh, ow) or c_off + cout > y.shape[1]:
        raise ValueError("output slice does not fit the conv's output")
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout, oh, ow,
                   kh, kw, sh, sw, ph, pw, dh, dw, c_off, y.shape[1], apply_relu,
                   grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def _out_hw(conv, h, w):
    _, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    return (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1


def launch(k, model, x):
    x = x.contiguous()
    n, _, h, w = x.shape
    # squeeze -> ReLU
    sq = model.squeeze
    sh_, sw_ = _out_hw(sq, h, w)
    s = k.empty(n, sq.weight.shape[0], sh_, sw_, dtype=x.dtype)
    conv2d(k, sq, x, s, 0, 1)
    # torch.cat([relu(expand1x1(s)), relu(expand3x3(s))], 1): each branch into its channel slice
    e1, e3 = model.expand1x1, model.expand3x3
    c1 = e1.weight.shape[0]
    c3 = e3.weight.shape[0]
    oh, ow = _out_hw(e1, sh_, sw_)
    if _out_hw(e3, sh_, sw_) != (oh, ow):
        raise ValueError("expand branches disagree on the output size")
    out = k.empty(n, c1 + c3, oh, ow, dtype=x.dtype)
    conv2d(k, e1, s, out, 0, 1)
    conv2d(k, e3, s, out, c1, 1)
    return out
