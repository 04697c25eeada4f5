BLOCK = 256        # matches sdata[256] in kernel.cu
MAX_BLOCKS = 4096  # partial sums; each thread then adds about n / (BLOCK * MAX_BLOCKS) terms
BETA = 1.0         # F.smooth_l1_loss default; the problem passes none


def launch(k, model, predictions, targets):
    if predictions.shape != targets.shape:
        raise ValueError("smooth_l1_partial expects predictions and targets of one shape")
    predictions = predictions.contiguous()
    targets = targets.contiguous()
    n = predictions.numel()
    blocks = min(k.cdiv(n, BLOCK), MAX_BLOCKS)
    partial = k.empty(blocks)
    k.smooth_l1_partial(predictions, targets, partial, n, BETA, grid=blocks, block=BLOCK)
    out = k.empty()
    k.mean_finish(partial, out, blocks, n, grid=1, block=BLOCK)
    return out
