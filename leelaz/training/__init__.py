"""Training data (Leela Zero chunk records), the supervised data path and the trainer.

Imports: nothing here (the package must import where PyTorch is not installed, so that the
verbs can say what to install: leelaz.install_hints).
"""
