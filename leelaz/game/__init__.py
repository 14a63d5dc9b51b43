"""Rules of Go as Leela Zero 0.17 plays them: coordinates, board, game state, SGF, clock.

Imports nothing outside leelaz.game."""
