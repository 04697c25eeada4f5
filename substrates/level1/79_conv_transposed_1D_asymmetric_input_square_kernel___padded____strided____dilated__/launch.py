BLOCK = 256


def launch(k, model, x):
    conv = model.conv1d_transpose
    if conv.bias is not None or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        raise ValueError("conv_transpose1d_gather handles bias=False with numeric zero padding")
    x = x.contiguous()
    batch, c_in, length = x.shape
    _, cout_g, ksize = conv.weight.shape
    groups = conv.groups
    c_out = cout_g * groups
    (stride,) = conv.stride
    (pad,) = conv.padding
    (dilation,) = conv.dilation
    (opad,) = conv.output_padding
    l_out = (length - 1) * stride - 2 * pad + dilation * (ksize - 1) + opad + 1
    out = k.empty(batch, c_out, l_out)
    n = batch * c_out * l_out
    k.conv_transpose1d_gather(x, conv.weight.contiguous(), out, n, c_in, length, c_out, ksize, l_out,
                              stride, pad, dilation, groups, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
