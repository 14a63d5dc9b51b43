"""The GTP front end: line protocol and the engine that executes commands."""
