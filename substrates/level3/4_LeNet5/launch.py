TILE = 16    # matches TILE in kernel.cu
BLOCK = 256
POOL = 2     # F.max_pool2d(x, kernel_size=2, stride=2) in the model's forward


def conv_relu(k, conv, x):
    assert conv.groups == 1 and conv.bias is not None and conv.padding_mode == "zeros"
    assert not isinstance(conv.padding, str)
    N, C_in, H, W = x.shape
    C_out, _, KH, KW = conv.weight.shape
    sh, sw = conv.stride
    ph, pw = conv.padding
    dh, dw = conv.dilation
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    y = k.empty(N, C_out, OH, OW, dtype=x.dtype)
    k.conv2d_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, N, C_in, H, W, C_out, OH, OW,
                   KH, KW, sh, sw, ph, pw, dh, dw, 1,
                   grid=(k.cdiv(N * OH * OW, TILE), k.cdiv(C_out, TILE)), block=(TILE, TILE))
    return y


def maxpool(k, x):
    N, C, H, W = x.shape
    OH = (H - POOL) // POOL + 1
    OW = (W - POOL) // POOL + 1
    y = k.empty(N, C, OH, OW, dtype=x.dtype)
    n = N * C * OH * OW
    k.maxpool2d(x, y, n, H, W, OH, OW, POOL, POOL, POOL, POOL, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def linear(k, fc, x, relu):
    assert fc.bias is not None
    M, K = x.shape
    N = fc.weight.shape[0]
    assert fc.weight.shape[1] == K
    out = k.empty(M, N, dtype=x.dtype)
    k.linear_bias_act(x, fc.weight.contiguous(), fc.bias.contiguous(), out, M, N, K, relu,
                      grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return out


def launch(k, model, x):
    h = maxpool(k, conv_relu(k, model.conv1, x.contiguous()))
    h = maxpool(k, conv_relu(k, model.conv2, h))
    h = h.view(-1, model.fc1.weight.shape[1])  # the model's flatten: x.view(-1, 16*5*5)
    h = linear(k, model.fc1, h, 1)
    h = linear(k, model.fc2, h, 1)
    return linear(k, model.fc3, h, 0)
