BLOCK = 256
CHUNK = 4096


def launch(k, model, A, B):
    A = A.contiguous()
    B = B.contiguous()
    M, K = A.shape
    out = k.empty(M, B.shape[1], dtype=A.dtype)
    nchunks = k.cdiv(K, CHUNK)
    partial = k.empty(M, nchunks, dtype=A.dtype)
    k.gemv_partial(A, B, partial, M, K, nchunks, CHUNK, grid=M * nchunks, block=BLOCK)
    k.gemv_finish(partial, out, M, nchunks, grid=M, block=BLOCK)
    return out
