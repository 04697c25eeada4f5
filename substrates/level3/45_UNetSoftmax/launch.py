BLOCK = 256
TILE = 32  # matches TILE in kernel.cu
RED_BLOCK = 512  # matches RED_BLOCK
SM_BLOCK = 256  # matches SM_BLOCK


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x, y=None, c_off=0):
    """nn.Conv2d with bias (groups 1, zero padding) as a tiled implicit GEMM, written into
    channels [c_off, c_off + C_out) of y when given, else into a new tensor."""
    if conv.groups != 1 or conv.bias is None or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        raise ValueError("conv2d_igemm handles groups=1, numeric zero padding, with a bias only")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if y is None:
        y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    if tuple(y.shape) != (n, y.shape[1], oh, ow) or c_off + cout > y.shape[1]:
        raise ValueError("output slice does not fit the conv's output")
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout, oh, ow,
                   kh, kw, sh, sw, ph, pw, dh, dw, c_off, y.shape[1],
                   grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def _upconv_out(conv, h, w):
    _, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oph, opw = _pair(conv.output_padding)
    return (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1, (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1


def conv_transpose2d(k, conv, x, y, c_off):
    """nn.ConvTranspose2d with bias (groups 1) as a tiled implicit GEMM into channels
    [c_off, c_off + C_out) of y."""
    if conv.groups != 1 or conv.bias is None or conv.padding_mode != "zeros":
        raise ValueError("conv_transpose2d_igemm handles groups=1, zero padding, with a bias only")
    n, cin, h, w = x.shape
    _, cout, kh, kw = conv.weight.shape  # (C_in, C_out, KH, KW)
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh, ow = _upconv_out(conv, h, w)
    if tuple(y.shape) != (n, y.shape[1], oh, ow) or c_off + cout > y.shape[1]:
        raise ValueError("output slice does not fit the transposed conv's output")
    m = n * oh * ow
    k.conv_transpose2d_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout,
                             oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, c_off, y.shape[1],
                             grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def batch_norm(k, bn, y):
    """nn.BatchNorm2d as its forward uses it: batch statistics in training mode (or without
    running stats), the running statistics in eval mode."""
    n, c, h, w = y.shape
    hw = h * w
    if bn.training or bn.running_mean is None or bn.running_var is None:
        mean = k.empty(c, dtype=y.dtype)
        var = k.empty(c, dtype=y.dtype)
        k.bn2d_stats(y, mean, var, n, c, hw, grid=c, block=RED_BLOCK)
    else:
        mean, var = bn.running_mean, bn.running_var
    out = k.empty_like(y)
    total = y.numel()
    k.bn2d_apply(y, mean, var, bn.weight, bn.bias, out, c, hw, total, float(bn.eps),
                 grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out


def softmax(k, sm, x):
    dim = sm.dim if sm.dim is not None else -1
    if dim < 0:
        dim += x.dim()
    if dim != x.dim() - 1:
        raise ValueError("softmax_lastdim handles the last dim only")
    length = x.shape[-1]
    rows = x.numel() // length
    out = k.empty_like(x)
    k.softmax_lastdim(x, out, rows, length, grid=rows, block=SM_BLOCK)
    return out


def maxpool2d(k, pool, x):
    if pool.return_indices or pool.ceil_mode:
        raise ValueError("maxpool2d: values only, floor mode")
    n, c, h, w = x.shape
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    dh, dw = _pair(pool.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.maxpool2d(x, y, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, total,
                grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def double_conv(k, block, x):
    """The layers of a DoubleConv's Sequential, in order."""
    for layer in block.double_conv:
        kind = type(layer).__name__
        if kind == "Conv2d":
            x = conv2d(k, layer, x)
        elif kind == "BatchNorm2d":
            x = batch_norm(k, layer, x)
        elif kind == "Softmax":
            x = softmax(k, layer, x)
        else:
            raise ValueError(f"no kernel for {kind}")
    return x


def up_cat(k, upconv, x, skip):
    """torch.cat((upconv(x), skip), dim=1) by channel-slice writes."""
    n, cs, h, w = skip.shape
    cu = upconv.weight.shape[1]
    cat = k.empty(n, cu + cs, h, w, dtype=skip.dtype)
    conv_transpose2d(k, upconv, x, cat, 0)
    hw = h * w
    total = skip.numel()
    k.copy_channels(skip, cat, cs, hw, cu, cu + cs, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return cat


def launch(k, model, x):
    x = x.contiguous()
    enc1 = double_conv(k, model.encoder1, x)
    enc2 = double_conv(k, model.encoder2, maxpool2d(k, model.pool1, enc1))
    enc3 = double_conv(k, model.encoder3, maxpool2d(k, model.pool2, enc2))
    enc4 = double_conv(k, model.encoder4, maxpool2d(k, model.pool3, enc3))

    bottleneck = double_conv(k, model.bottleneck, maxpool2d(k, model.pool4, enc4))

    dec4 = double_conv(k, model.decoder4, up_cat(k, model.upconv4, bottleneck, enc4))
    dec3 = double_conv(k, model.decoder3, up_cat(k, model.upconv3, dec4, enc3))
    dec2 = double_conv(k, model.decoder2, up_cat(k, model.upconv2, dec3, enc2))
    dec1 = double_conv(k, model.decoder1, up_cat(k, model.upconv1, dec2, enc1))

    return conv2d(k, model.final_conv, dec1)
