TILE = 16    # matches TILE in kernel.cu
COLS = 32    # matches COLS in kernel.cu
ROWS = 8     # matches ROWS in kernel.cu
BLOCK = 256


def launch(k, model, x):
    x = x.contiguous()
    lin, bn = model.matmul, model.bn
    M, K = x.shape
    N = lin.weight.shape[0]
    assert model.bias.numel() == 1  # bias_shape (1,) broadcasts as a scalar
    y = k.empty(M, N)
    k.linear_tiled(x, lin.weight.contiguous(), lin.bias.contiguous(), y, M, N, K,
                   grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    mean = k.empty(N)
    rstd = k.empty(N)
    k.col_mean_rstd(y, mean, rstd, M, N, bn.eps, grid=k.cdiv(N, COLS), block=(COLS, ROWS))
    out = k.empty(M, N)
    n = M * N
    k.bn_bias_div_swish(y, mean, rstd, bn.weight.contiguous(), bn.bias.contiguous(), model.bias.contiguous(),
                        out, n, N, float(model.divide_value), grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
