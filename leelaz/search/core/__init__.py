"""The compiled search core: a search call's batches over array-based nodes (numba).

arrays.py holds the tree, kernels.py the compiled loops, run.py the SearchRun that calls
them; the Python search (search/run.py, search/node.py) stays the reference."""
