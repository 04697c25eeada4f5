"""Analysis: everything that is a query over the store — scores, suites, targeted inputs, listings. No torch, no CUDA."""
