TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    x = x.contiguous()
    lin = model.gemm
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N)
    k.linear_tiled(x, lin.weight.contiguous(), lin.bias.contiguous(), y, M, N, K,
                   grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    dim = model.max_dim % 2
    if dim == 1:
        outer, red, inner = M, N, 1
        rows, cols = M, 1
    else:
        outer, red, inner = 1, M, N
        rows, cols = 1, N
    m = k.empty(rows, cols)
    k.max_axis(y, m, outer, red, inner, grid=outer * inner, block=BLOCK)
    out = k.empty(rows, cols)
    k.sub_row_mean_gelu(m, out, rows, cols, grid=rows, block=BLOCK)
    return out
