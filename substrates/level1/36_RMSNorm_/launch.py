BLOCK = 256


def launch(k, model, x):
    x = x.contiguous()
    batch, channels = x.shape[0], x.shape[1]
    plane_len = x.numel() // (batch * channels)
    positions = batch * plane_len
    y = k.empty_like(x)
    k.rms_norm(x, y, positions, channels, plane_len, model.eps, grid=k.cdiv(positions, BLOCK), block=BLOCK)
    return y
