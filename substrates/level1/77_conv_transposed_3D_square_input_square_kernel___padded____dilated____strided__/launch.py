BLOCK = 256


def launch(k, model, x):
    conv = model.conv_transpose3d
    if conv.bias is not None or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        raise ValueError("conv_transpose3d_gather handles bias=False with numeric zero padding")
    x = x.contiguous()
    batch, c_in, d, h, w = x.shape
    _, cout_g, kd, kh, kw = conv.weight.shape
    groups = conv.groups
    c_out = cout_g * groups
    stride_d, stride_h, stride_w = conv.stride
    pad_d, pad_h, pad_w = conv.padding
    dil_d, dil_h, dil_w = conv.dilation
    opad_d, opad_h, opad_w = conv.output_padding
    d_out = (d - 1) * stride_d - 2 * pad_d + dil_d * (kd - 1) + opad_d + 1
    h_out = (h - 1) * stride_h - 2 * pad_h + dil_h * (kh - 1) + opad_h + 1
    w_out = (w - 1) * stride_w - 2 * pad_w + dil_w * (kw - 1) + opad_w + 1
    out = k.empty(batch, c_out, d_out, h_out, w_out)
    n = batch * c_out * d_out * h_out * w_out
    k.conv_transpose3d_gather(x, conv.weight.contiguous(), out, n, c_in, d, h, w, c_out, kd, kh, kw,
                              d_out, h_out, w_out, stride_d, stride_h, stride_w, pad_d, pad_h, pad_w,
                              dil_d, dil_h, dil_w, groups, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
