import torch.nn as nn

BLOCK = 256
TILE = 32  # matches TILE in kernel.cu
POOL_BLOCK = 256  # matches POOL_BLOCK in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _out_hw(conv, h, w):
    _, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    return (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1


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
    oh, ow = _out_hw(conv, h, w)
    if tuple(y.shape) != (n, y.shape[1], oh, ow) or c_off + cout > y.shape[1]:
        raise ValueError("output slice does not fit the conv's output")
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout, oh, ow,
                   kh, kw, sh, sw, ph, pw, dh, dw, c_off, y.shape[1], apply_relu,
                   grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def conv_relu(k, conv, x):
    """conv -> ReLU into a fresh tensor."""
    n = x.shape[0]
    oh, ow = _out_hw(conv, x.shape[2], x.shape[3])
    y = k.empty(n, conv.weight.shape[0], oh, ow, dtype=x.dtype)
    return conv2d(k, conv, x, y, 0, 1)


def fire(k, mod, x):
    """squeeze -> ReLU, then torch.cat([relu(expand1x1(s)), relu(expand3x3(s))], 1), each branch
    written into its channel slice."""
    s = conv_relu(k, mod.squeeze, x)
    e1, e3 = mod.expand1x1, mod.expand3x3
    c1 = e1.weight.shape[0]
    c3 = e3.weight.shape[0]
    oh, ow = _out_hw(e1, s.shape[2], s.shape[3])
    if _out_hw(e3, s.shape[2], s.shape[3]) != (oh, ow):
        raise ValueError("expand branches disagree on the output size")
    out = k.empty(s.shape[0], c1 + c3, oh, ow, dtype=x.dtype)
    conv2d(k, e1, s, out, 0, 1)
    conv2d(k, e3, s, out, c1, 1)
    return out


def _pool_out(size, kernel, stride, pad, dil, ceil_mode):
    span = size + 2 * pad - dil * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad:  # the last window must start inside the input or left padding
            out -= 1
    else:
        out = span // stride + 1
    return out


def maxpool2d(k, pool, x):
    n, c, h, w = x.shape
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    dh, dw = _pair(pool.dilation)
    oh = _pool_out(h, kh, sh, ph, dh, pool.ceil_mode)
    ow = _pool_out(w, kw, sw, pw, dw, pool.ceil_mode)
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.maxpool2d(x, y, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, total,
                grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def adaptive_avgpool2d(k, pool, x):
    n, c, h, w = x.shape
    out_size = _pair(pool.output_size)
    oh = h if out_size[0] is None else out_size[0]
    ow = w if out_size[1] is None else out_size[1]
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    k.adaptive_avgpool2d(x, y, h, w, oh, ow, grid=y.numel(), block=POOL_BLOCK)
    return y


def dropout(drop, x):
    # p = 0 is the identity in training and eval mode alike
    if drop.training and drop.p != 0.0:
        raise ValueError("dropout with p > 0 in training mode is random")
    return x


def run_sequential(k, seq, x):
    """Walk an nn.Sequential; a conv followed by a ReLU runs as one fused launch."""
    mods = list(seq)
    i = 0
    while i < len(mods):
        mod = mods[i]
        if isinstance(mod, nn.Conv2d):
            if i + 1 >= len(mods) or not isinstance(mods[i + 1], nn.ReLU):
                raise ValueError("every conv here is followed by a ReLU")
            x = conv_relu(k, mod, x)
            i += 2
            continue
        if isinstance(mod, nn.MaxPool2d):
            x = maxpool2d(k, mod, x)
        elif isinstance(mod, nn.AdaptiveAvgPool2d):
            x = adaptive_avgpool2d(k, mod, x)
        elif isinstance(mod, nn.Dropout):
            x = dropout(mod, x)
        elif hasattr(mod, "squeeze") and hasattr(mod, "expand1x1") and hasattr(mod, "expand3x3"):
            x = fire(k, mod, x)
        else:
            raise ValueError(f"unexpected module {type(mod).__name__}")
        i += 1
    return x


def launch(k, model, x):
    x = x.contiguous()
    x = run_sequential(k, model.features, x)
    x = run_sequential(k, model.classifier, x)
    return x.reshape(x.shape[0], -1)  # torch.flatten(x, 1): a view of the contiguous NCHW tensor
