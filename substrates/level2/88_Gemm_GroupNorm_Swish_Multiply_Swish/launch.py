TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    x = x.contiguous()
    lin, gn = model.gemm, model.group_norm
    M, K = x.shape
    N = lin.weight.shape[0]
    G = gn.num_groups
    y = k.empty(M, N)
    k.linear_tiled(x, lin.weight.contiguous(), lin.bias.contiguous(), y, M, N, K,
                   grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    out = k.empty(M, N)
    k.group_norm_swish_mul_swish(y, gn.weight.contiguous(), gn.bias.contiguous(),
                                 model.multiply_weight.contiguous(), out, M * G, G, N // G, gn.eps,
                                 grid=M * G, block=BLOCK)
    return out
