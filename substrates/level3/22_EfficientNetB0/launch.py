import torch.nn as nn

BLOCK = 256
TILE = 32  # matches TILE in kernel.cu
RED_BLOCK = 512  # matches RED_BLOCK in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x):
    """nn.Conv2d without bias: a direct kernel when depthwise (groups = C_in = C_out), else a
    tiled implicit GEMM with one group per grid z."""
    if conv.bias is not None or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        raise ValueError("conv2d handles bias=False with numeric zero padding only")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    groups = conv.groups
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    if groups == cin and groups == cout:
        total = y.numel()
        k.conv2d_depthwise(x, conv.weight.contiguous(), y, cout, h, w, oh, ow, kh, kw,
                           sh, sw, ph, pw, dh, dw, total,
                           grid=k.cdiv(total, BLOCK), block=BLOCK)
    else:
        m = n * oh * ow
        k.conv2d_igemm(x, conv.weight.contiguous(), y, n, cin, h, w, cout, oh, ow, kh, kw,
                       sh, sw, ph, pw, dh, dw, groups,
                       grid=(k.cdiv(m, TILE), k.cdiv(cout // groups, TILE), groups), block=(TILE, TILE))
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


def relu6(k, x):
    y = k.empty_like(x)
    n = x.numel()
    k.relu6_forward(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def add(k, a, b):
    out = k.empty_like(a)
    n = a.numel()
    k.add_forward(a, b, out, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out


def adaptive_avgpool2d(k, output_size, x):
    """AdaptiveAvgPool2d / F.adaptive_avg_pool2d: one block per output element."""
    n, c, h, w = x.shape
    oh, ow = _pair(output_size)
    oh = h if oh is None else oh
    ow = w if ow is None else ow
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    k.adaptive_avgpool2d(x, y, h, w, oh, ow, grid=y.numel(), block=RED_BLOCK)
    return y


def linear(k, lin, x):
    """nn.Linear: y = x W^T + b, shared-memory tiled."""
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N, dtype=x.dtype)
    k.linear_forward(x, lin.weight.contiguous(), lin.bias, y, M, N, K,
                     grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return y


def conv_bn(k, seq, x):
    """Conv2d -> BatchNorm2d, then ReLU6 if the stage has one."""
    x = batch_norm(k, seq[1], conv2d(k, seq[0], x))
    if len(seq) > 2:
        if not isinstance(seq[2], nn.ReLU6):
            raise ValueError(f"unsupported activation {type(seq[2]).__name__}")
        x = relu6(k, x)
    return x


def mbconv(k, blk, x):
    identity = x
    if hasattr(blk, "expand_conv"):
        x = conv_bn(k, blk.expand_conv, x)
    x = conv_bn(k, blk.depthwise_conv, x)
    x = conv_bn(k, blk.project_conv, x)
    if blk.use_residual:
        x = add(k, x, identity)
    return x


def launch(k, model, x):
    x = x.contiguous()
    x = relu(k, batch_norm(k, model.bn1, conv2d(k, model.conv1, x)))
    for blk in model.blocks:
        x = mbconv(k, blk, x)
    x = relu(k, batch_norm(k, model.bn2, conv2d(k, model.conv2, x)))
    x = adaptive_avgpool2d(k, (1, 1), x)
    x = x.reshape(x.shape[0], -1)  # x.view(x.size(0), -1) of the contiguous NCHW tensor
    return linear(k, model.fc, x)
