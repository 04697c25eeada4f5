BLOCK = 512  # threads per block; matches the kernel's shared array


def launch(k, model, x):
    x = x.contiguous()
    planes = x.shape[0] * x.shape[1]
    plane_len = x.numel() // planes
    y = k.empty_like(x)
    k.instance_norm(x, y, plane_len, model.inorm.eps, grid=planes, block=BLOCK)
    return y
