"""PUCT tree search. Never imports the network: it is handed an evaluator."""
