TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, x):
    x = x.contiguous()
    lin = model.linear
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N)
    k.linear_gelu(x, lin.weight.contiguous(), lin.bias.contiguous(), y, M, N, K,
                  grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    out = k.empty(M, N)
    k.softmax_rows(y, out, M, N, grid=M, block=BLOCK)
    return out
