BLOCK = 256
TILE = 32
RED_BLOCK = 512


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x):
    """nn.Conv2d without bias (groups 1) as a tiled implicit GEMM."""
    if conv.groups != 1 or conv.bias is not None:
        raise ValueError("conv2d_igemm handles groups=1 and bias=False only")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), y, n, cin, h, w, cout, oh, ow, kh, kw,
                   sh, sw, ph, pw, dh, dw,
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


def relu(k, x):
    y = k.empty_like(x)
    n = x.numel()
    k.relu_forward(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def launch(k, model, x):
    x = x.contiguous()
    out = conv2d(k, model.conv1, x)
    out = batch_norm(k, model.bn1, out)
    out = relu(k, out)
    out = conv2d(k, model.conv2, out)
    out = batch_norm(k, model.bn2, out)

    identity = x
    if model.downsample is not None:
        ds_conv, ds_bn = model.downsample[0], model.downsample[1]
        identity = conv2d(k, ds_conv, x)
        identity = batch_norm(k, ds_bn, identity)

    res = k.empty_like(out)
    n = out.numel()
    k.add_relu(out, identity, res, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return res
