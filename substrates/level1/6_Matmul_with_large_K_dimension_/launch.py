TILE = 32
KCHUNK = 1024


def launch(k, model, A, B):
    A = A.contiguous()
    B = B.contiguous()
    M, K = A.shape
    N = B.shape[1]
    C = k.empty(M, N, dtype=A.dtype)
    splits = k.cdiv(K, KCHUNK)
    partial = k.empty(splits, M, N, dtype=A.dtype)
    tiles = splits * k.cdiv(M, TILE) * k.cdiv(N, TILE)
    k.matmul_splitk_partial(A, B, partial, M, N, K, KCHUNK, grid=tiles, block=(TILE, TILE))
    mn = M * N
    k.splitk_reduce(partial, C, mn, splits, grid=k.cdiv(mn, TILE), block=(TILE, TILE))
    return C
