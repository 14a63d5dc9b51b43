"""`leelaz review`: every position of a game's main line searched, the positions of several
games batched into the same network calls, and the game written back annotated.

The package (imports: game/, nn/, search/, selfplay/ (the batching runner), gtp/ (search
settings), files, progress; layer of the verbs):
- games.py: the input: SGF files or a folder of them, parsed into `ReviewGame`s (the main
  line's positions and moves), one clear line for a file or game that cannot be used.
- analyse.py: the searches: one lz-analyze-style search per position, many in flight, their
  leaves joined into one network call per round by self-play's runner.
- moves.py: what the searches say about each move (winrate before and after, the drop,
  the preferred move and line) and each side's largest drops.
- annotate.py: the annotated SGF (comments, Sabaki's SBKV, variations where a move lost more
  than --variation-drop).
- report.py: the Markdown report, the JSON, the summary line; plot.py: the winrate PNG.
The verb itself (options, messages, exit status) is leelaz/tools/review.py.
"""

#: Positions searched at once by default (`--parallel` of both verbs): their leaves make one
#: network call a round. Here, not in analyse.py, so that the command lines can show it
#: without importing the search.
DEFAULT_PARALLEL = 128
#: With the tree kept, stretches of a game searched at once (`--trees`; review/analyse.py).
DEFAULT_TREES = 8
