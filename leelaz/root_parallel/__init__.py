"""Several processes searching one position, each its own tree (root parallelism): pool.py
(the engine's side, a UCTSearch) and helper.py (each other process)."""
