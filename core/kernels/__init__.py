"""Numba kernels behind validating wrappers. Importing a submodule imports numba; this package does not."""
