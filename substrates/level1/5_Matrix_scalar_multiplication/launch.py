BLOCK = 256


def launch(k, model, A, s):
    A = A.contiguous()
    C = k.empty_like(A)
    n = A.numel()
    k.scale(A, C, n, s, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return C
