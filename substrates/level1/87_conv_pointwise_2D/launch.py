TILE = 16  # matches TILE in kernel.cu


def launch(k, model, x):
    conv = model.conv1d
    if conv.bias is not None:
        raise ValueError("this substrate handles bias=False")
    if tuple(conv.kernel_size) != (1, 1) or tuple(conv.stride) != (1, 1) or tuple(conv.padding) != (0, 0) \
            or conv.groups != 1:
        raise ValueError("pointwise_conv_tiled handles a 1x1, stride 1, unpadded, ungrouped convolution")
    x = x.contiguous()
    batch, c_in, h, w = x.shape
    c_out = conv.weight.shape[0]
    hw = h * w
    out = k.empty(batch, c_out, h, w)
    k.pointwise_conv_tiled(x, conv.weight.contiguous(), out, c_in, c_out, hw,
                           grid=(k.cdiv(hw, TILE), k.cdiv(c_out, TILE), batch), block=(TILE, TILE))
    return out
