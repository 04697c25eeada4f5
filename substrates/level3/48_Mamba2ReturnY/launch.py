TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # the block of the flat kernels (chunk_totals, state_passing)


def scan_log_threads(rows, length):
    """log2 of the threads per row torch's CUDA cumsum of a last dimension uses (2x as many
    elements per chunk), as its get_log_num_threads_x_inner_scan computes it in uint32: the
    kernel's association of the sum follows from it."""
    lx = (length - 1).bit_length()  # the least lx with 2**lx >= length
    ly = (rows - 1).bit_length()
    lx = ((9 + lx - ly) % (1 << 32)) // 2
    return min(max(4, lx), 9)


def launch(k, model, X, initial_states=None):
    X = X.contiguous()
    A = model.A.contiguous()
    Bm = model.B.contiguous()
    Cm = model.C.contiguous()
    b, T, H, P = X.shape
    L = model.block_len
    N = Bm.shape[-1]
    assert T % L == 0
    assert tuple(A.shape) == (b, T, H)
    assert tuple(Bm.shape) == (b, T, H, N) and tuple(Cm.shape) == (b, T, H, N)
    nchunks = T // L
    Z = b * nchunks * H

    # A_cumsum: cumsum over the l of each chunk; A seen as (b * c, L, H), scanned along L
    acs = k.empty_like(A)
    rows = b * nchunks * H
    lg = scan_log_threads(rows, L)
    k.cumsum_scan(A, acs, rows, L, H, lg, grid=rows, block=1 << lg)

    # 1. diagonal blocks, scores: G = (C B^T) * exp(segsum)
    G = k.empty(Z, L, L, dtype=X.dtype)
    k.ssd_scores(Cm, Bm, acs, G, T, L, H, N, nchunks,
                 grid=(k.cdiv(L, TILE), k.cdiv(L, TILE), Z), block=(TILE, TILE))

    # 2. intra-chunk states (b, c, h, p, n)
    S = k.empty(b, nchunks, H, P, N, dtype=X.dtype)
    k.chunk_states(Bm, X, acs, S, T, L, H, P, N, nchunks,
                   grid=(k.cdiv(N, TILE), k.cdiv(P, TILE), Z), block=(TILE, TILE))

    # 3. inter-chunk recurrence; states = new_states[:, :-1] (chunks 0 .. c-1)
    zin = k.empty(b, H, nchunks + 1, dtype=X.dtype)
    n = zin.numel()
    k.chunk_totals(acs, zin, b, T, L, H, nchunks, grid=k.cdiv(n, BLOCK), block=BLOCK)
    zc = k.empty_like(zin)
    lg = scan_log_threads(b * H, nchunks + 1)
    k.cumsum_scan(zin, zc, b * H, nchunks + 1, 1, lg, grid=b * H, block=1 << lg)
    if initial_states is None:
        init, has_init = S, 0  # not read: the zero initial state is written into the kernel
    else:
        init, has_init = initial_states.contiguous(), 1
        assert tuple(init.shape) == (b, 1, H, P, N)
    Sp = k.empty(b, nchunks, H, P, N, dtype=X.dtype)
    n = Sp.numel()
    k.state_passing(S, init, has_init, zc, Sp, b, H, P, N, nchunks, 0, nchunks,
                    grid=k.cdiv(n, BLOCK), block=BLOCK)

    # 4. Y = Y_diag + Y_off: Y_off first, then Y_diag added to it
    Y = k.empty_like(X)
    k.ssd_off(Cm, Sp, acs, Y, T, L, H, P, N, nchunks,
              grid=(k.cdiv(P, TILE), k.cdiv(L, TILE), Z), block=(TILE, TILE))
    k.ssd_diag_add(G, X, Y, T, L, H, P, nchunks,
                   grid=(k.cdiv(P, TILE), k.cdiv(L, TILE), Z), block=(TILE, TILE))
    return Y
