"""Conformance with the real checkers: kbm mutants as KernelBench `ModelNew` submissions, judged by
KernelBench's and KernelBench-Verified's own `eval_kernel_against_ref` (imported from the user's
checkouts), against the verdicts kbm's store holds for the matching protocols.

`model_new` writes a submission; `checkers` imports a checker's eval and runs one submission
through it; `selection` draws the mutants whose stored verdict is decided; `workers` runs
submissions in worker processes on one GPU; `harness` streams results to a JSONL file and sums
them up (`bench/conformance.py` is the command).
"""
