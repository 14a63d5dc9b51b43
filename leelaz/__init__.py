"""leelaz: Leela Zero 0.17 in Python. Owns the version string; imports nothing."""

__version__ = "0.1.0"
#: What `version` answers over GTP: clients (Lizzie, the validation tool) parse it as 0.NN.
GTP_VERSION = "0.17"
