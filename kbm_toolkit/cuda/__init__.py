"""CUDA: NVRTC compiles, kernel signatures, launch checks, loading images and launching, references and comparisons."""
