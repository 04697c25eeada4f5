BLOCK = 256        # matches sdata[256] in kernel.cu
MAX_BLOCKS = 4096  # partial sums; each thread then adds about n / (BLOCK * MAX_BLOCKS) terms


def launch(k, model, predictions, targets):
    # torch broadcasts the 1-D targets against the LAST dimension of predictions
    if targets.dim() != 1 or targets.shape[0] not in (predictions.shape[-1], 1):
        raise ValueError("hinge_partial expects 1-D targets broadcasting along the last dimension")
    predictions = predictions.contiguous()
    targets = targets.contiguous()
    n = predictions.numel()
    tn = targets.numel()
    blocks = min(k.cdiv(n, BLOCK), MAX_BLOCKS)
    partial = k.empty(blocks)
    k.hinge_partial(predictions, targets, partial, n, tn, grid=blocks, block=BLOCK)
    out = k.empty()
    k.mean_finish(partial, out, blocks, n, grid=1, block=BLOCK)
    return out
