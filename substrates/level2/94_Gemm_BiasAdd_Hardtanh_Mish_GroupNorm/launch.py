TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    x = x.contiguous()
    lin, gn, ht = model.gemm, model.groupnorm, model.hardtanh
    M, K = x.shape
    N = lin.weight.shape[0]
    G = gn.num_groups
    y = k.empty(M, N)
    k.linear_bias_hardtanh_mish(x, lin.weight.contiguous(), lin.bias.contiguous(), model.bias.contiguous(), y,
                                M, N, K, float(ht.min_val), float(ht.max_val),
                                grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    out = k.empty(M, N)
    k.group_norm_rows(y, gn.weight.contiguous(), gn.bias.contiguous(), out, M * G, G, N // G, gn.eps,
                      grid=M * G, block=BLOCK)
    return out
