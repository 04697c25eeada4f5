"""Mutation: rules as data, mutants at one site each, screening with NVRTC, and the campaign that stores them."""
