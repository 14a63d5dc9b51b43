"""The engine loop and the board commands, as scripted sessions.

Where our replies should equal Leela Zero's, the whole script also runs through the binary
(one process per script) and the two streams must be byte-identical. Our deliberate
differences (LZ-DIFF in board_commands.py) are checked against values worked out by hand.
"""

from __future__ import annotations

import io
import os
import subprocess
import threading
import time

import pytest

from gtp_session import Session, make_engine, run_script, split_replies
from leelaz.gtp.protocol import GtpError

# Commands on which we must answer exactly like the binary (no LZ-DIFF case inside).
SAME_AS_LZ = """\
boardsize 9
boardsize x
boardsize
komi x
komi
komi 6.5x
play
play b
play x d4
play b z99
play b i5
undo
last_move
move_history
1 play b d4
2 play w d4
play W Q16
3 last_move
final_score
final_status_list alive
final_status_list dead
final_status_list seki
time_settings 1 2
time_settings 100 30 5
time_settings 10 20 3x
time_settings 99999999999 1 1
time_left x 1 1
time_left b 1
time_left b 10 3
fixed_handicap 1
fixed_handicap x
known_command play
known_command kgs-chat
known_command dump_training
known_command genmoves
kgs-chat hi
kgs-game_over
kgs-time_settings
kgs-time_settings none
kgs-time_settings absolute 10
kgs-time_settings byoyomi 10 5 3
kgs-time_settings foo
loadsgf
loadsgf /nonexistent/file.sgf
clear_board
undo
fixed_handicap 3
undo
clear_board
place_free_handicap 12
clear_board
place_free_handicap 0
place_free_handicap 1
clear_board
place_free_handicap
set_free_handicap
komi 0x10
komi 1e400
komi nan
final_score
clear_board
play b pass
play w pass
last_move
final_score
komi -400
final_score
5 unknowncmd
12name
   
# comment
\tname
 10 name
11  name
NAME
7 exit
"""


def lz_stream(lz_binary, weights, script: str) -> str:
    proc = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-q",
                           "-w", weights], input=script.encode(), capture_output=True,
                          timeout=60)
    return proc.stdout.decode()


def our_stream(script: str) -> str:
    return run_script(script)[0]


def test_session_is_byte_identical_to_lz(lz_binary, random_weights):
    theirs = lz_stream(lz_binary, random_weights(1, 8), SAME_AS_LZ)
    ours = our_stream(SAME_AS_LZ)
    assert split_replies(ours) == split_replies(theirs)
    assert ours == theirs


def test_list_commands_matches_lz_for_what_we_have(lz_binary, random_weights):
    theirs = split_replies(lz_stream(lz_binary, random_weights(1, 8), "list_commands\n"))[0]
    lz_names = theirs[2:].split("\n")
    ours = split_replies(our_stream("list_commands\n"))[0][2:].split("\n")
    assert ours == [n for n in lz_names if n in ours]  # same order, nothing extra
    assert "kgs-chat" not in ours and "dump_training" not in ours


def test_ids_and_unknown_commands():
    out = our_stream("8 version\n9 bogus\nprotocol_version\n")
    assert out == "=8 0.17\n\n?9 unknown command\n\n= 2\n\n\n"  # last \n: LZ's newline at EOF


def test_exit_and_quit_stop_at_once():
    assert our_stream("name\nexit\nname\n") == "= Leela Zero\n\n"
    assert our_stream("4 quit\nname\n") == "=4 \n\n"


def test_move_history_echoes_the_id():  # LZ-DIFF: LZ always answers `= `
    s = Session()
    s.ask("play b d4")
    s.ask("play w q16")
    assert s.reply("6 move_history") == "=6 white Q16\nblack D4\n\n"


def test_non_alternating_play_and_history():
    s = Session()
    for line in ("play b d4", "play b d5", "play w c3"):
        assert s.reply(line) == "= \n\n"
    assert s.reply("move_history") == "= white C3\nblack D5\nblack D4\n\n"
    assert s.reply("last_move") == "= white C3\n\n"


def test_play_refuses_suicide_and_ko():  # LZ-DIFF: LZ accepts both
    s = Session()
    # White stones around A1: black A1 is suicide.
    for line in ("play w a2", "play w b1"):
        s.ask(line)
    assert s.reply("play b a1") == "? illegal move\n\n"
    # A ko at E5/F5: Black E4 E6 D5 ; White F4 F6 G5 ; Black F5 ; White E5 takes F5.
    s.ask("clear_board")
    for line in ("play b e4", "play b e6", "play b d5", "play w f4", "play w f6", "play w g5",
                 "play b f5", "play w e5"):
        assert s.reply(line) == "= \n\n", line
    assert s.reply("play b f5") == "? illegal move\n\n"  # immediate recapture
    assert s.reply("play b a1") == "= \n\n"  # a ko threat elsewhere...
    assert s.reply("play w a19") == "= \n\n"
    assert s.reply("play b f5") == "= \n\n"  # ...then the recapture is fine


@pytest.mark.parametrize("vertex", ["a0", "a00", "b-1", "z99", "i5", "t20", "aa", "5", "",
                                    "a99999999999999999999", "\u00e91"])
def test_bad_vertices_are_illegal_moves_not_aborts(vertex):
    s = Session()
    assert s.reply(f"play b {vertex}") in ("? illegal move\n\n", "? syntax not understood\n\n")
    assert s.reply("name") == "= Leela Zero\n\n"


def test_set_free_handicap_sends_exactly_one_reply():  # LZ-DIFF: LZ sends one per bad stone
    s = Session()
    assert s.reply("set_free_handicap d4 q16 zz d4") == "? illegal move\n\n"
    assert s.reply("move_history") == "= \n\n"  # nothing was placed
    assert s.reply("set_free_handicap d4 q16") == "= D4 Q16\n\n"
    assert s.reply("move_history") == "= black Q16\nblack D4\n\n"  # no anchoring, as in LZ
    assert s.engine.state.handicap == 2


def test_fixed_handicap_lists_every_stone():
    # LZ: `play w a1` then `fixed_handicap 2` -> `A1 D4 Q16`; the pattern is played Q16, D4,
    # and the last stone is still the last move after anchoring.
    s = Session()
    s.ask("play w a1")
    assert s.reply("fixed_handicap 2") == "= A1 D4 Q16\n\n"
    assert s.reply("last_move") == "= black D4\n\n"
    assert s.reply("move_history") == "= \n\n"
    assert s.reply("fixed_handicap 2") == "? board not empty\n\n"  # LZ-DIFF: LZ aborts


def test_handler_crash_becomes_internal_error():
    engine, out, err = make_engine()

    def boom(cmd):
        raise RuntimeError("boom\nsecond line")

    engine.add_command("boom", boom)
    run_script("3 boom\nname\n", engine=engine)
    assert out.getvalue().startswith("?3 internal error: boom second line\n\n= Leela Zero\n\n")
    assert "Traceback" in err.getvalue() and "RuntimeError" in err.getvalue()


def test_gtp_error_message_is_the_reply():
    engine, out, _ = make_engine()

    def refuse(cmd):
        raise GtpError("cannot do " + " ".join(cmd.args))

    engine.add_command("refuse", refuse)
    run_script("refuse A b\n", engine=engine)
    assert out.getvalue() == "? cannot do a b\n\n\n"


def test_streamed_reply_and_after_reply_order():
    engine, out, _ = make_engine()
    events = []

    def analyze(cmd):
        stream = engine.stream_reply(cmd)
        stream.write("info move D4 visits 1\n")
        stream.write("info move D4 visits 2\n")
        engine.after_reply(lambda: events.append(out.getvalue()))
        # forgot to close: the engine closes it

    def broken(cmd):
        engine.stream_reply(cmd)
        raise RuntimeError("late")

    engine.add_command("lz-analyze", analyze)
    engine.add_command("broken", broken)
    run_script("5 lz-analyze 10\nbroken\nname\n", engine=engine)
    assert out.getvalue() == ("=5\ninfo move D4 visits 1\ninfo move D4 visits 2\n\n"
                              "=\n\n= Leela Zero\n\n\n")
    assert events == ["=5\ninfo move D4 visits 1\ninfo move D4 visits 2\n\n"]


def test_pondering_stops_when_a_line_arrives():
    """A handler that replies and then keeps working until input_pending(), through a real
    pipe and the reader thread, as genmove with pondering will."""
    engine, out, _ = make_engine()
    pondering = threading.Event()

    def genmove(cmd):
        def ponder():
            pondering.set()
            while not engine.input_pending():
                engine.wait_input(0.01)
        engine.after_reply(ponder)
        return "D4"

    engine.add_command("genmove", genmove)
    r, w = os.pipe()
    reader = os.fdopen(r, "rb")
    writer = os.fdopen(w, "wb", buffering=0)
    thread = threading.Thread(target=engine.run, args=(reader,), daemon=True)
    thread.start()
    writer.write(b"1 genmove b\n")
    assert pondering.wait(5)
    assert out.getvalue() == "=1 D4\n\n"
    time.sleep(0.05)
    assert thread.is_alive() and out.getvalue() == "=1 D4\n\n"
    writer.write(b"2 name\n")
    writer.close()
    thread.join(5)
    assert not thread.is_alive()
    assert out.getvalue() == "=1 D4\n\n=2 Leela Zero\n\n\n"


def test_log_file_records_input_and_replies(tmp_path):
    log = io.StringIO()
    engine, out, _ = make_engine()
    engine.log = log
    run_script("name\n5 bogus\n", engine=engine)
    assert log.getvalue() == ">>name\n= Leela Zero\n\n>>5 bogus\n?5 unknown command\n\n\n"


def test_quiet_silences_showboard():
    from leelaz.config import EngineConfig
    out, err = run_script("showboard\n", config=EngineConfig(quiet=True))
    assert out == "= \n\n\n" and err == ""
    out, err = run_script("showboard\n")
    assert out == "= \n\n\n" and "Passes: 0" in err and err.endswith("White time: 01:00:00\n\n")


def test_known_command_without_a_name():  # LZ-DIFF: LZ answers `true` (a stale buffer)
    assert our_stream("known_command\n") == "? syntax not understood\n\n\n"


def test_printsgf_file_keeps_its_name_and_loads_back(tmp_path):
    s = Session()
    for line in ("komi 6.5", "play b q16", "play w d4", "play b pass"):
        s.ask(line)
    text = s.reply("printsgf")
    assert text.startswith("= (;GM[1]") and text.endswith(")\n\n\n\n")
    path = tmp_path / "Games" / "MyGame.SGF"
    path.parent.mkdir()
    assert s.reply(f"printsgf {path}") == "= \n\n"
    assert path.read_text() == text[2:-3]  # the file holds the SGF, `)` and one newline
    history = s.reply("move_history")
    s.ask("clear_board")
    assert s.reply(f"LOADSGF {path}") == "= \n\n"
    assert s.reply("move_history") == history == "= black pass\nwhite D4\nblack Q16\n\n"
    assert s.reply("final_score") == "= W+6.5\n\n"


def test_printsgf_writes_all_or_nothing(tmp_path, monkeypatch):
    s = Session()
    s.ask("play b q16")
    path = tmp_path / "game.sgf"
    path.write_text("old content")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", broken_replace)
    assert s.reply(f"printsgf {path}") == "? cannot write file\n\n"
    assert path.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.sgf"]  # no temporary left
    monkeypatch.undo()
    assert s.reply(f"printsgf {tmp_path}/no/such/folder/g.sgf") == "? cannot write file\n\n"
    assert s.reply("name") == "= Leela Zero\n\n"


def test_loadsgf_move_number_and_failure_keeps_the_game(tmp_path):
    path = tmp_path / "g.sgf"
    path.write_text("(;GM[1]SZ[19]KM[0.5];B[pd];W[dd];B[pp];W[dp])")
    s = Session()
    assert s.reply(f"loadsgf {path} 3") == "= \n\n"  # before node 3: two moves
    assert s.reply("move_history") == "= white D16\nblack Q16\n\n"
    assert s.reply(f"loadsgf {path} x") == "= \n\n"  # not a number: everything (999)
    assert s.reply("last_move") == "= white D4\n\n"
    assert s.reply(f"loadsgf {path}.missing") == "? cannot load file\n\n"
    assert s.reply("last_move") == "= white D4\n\n"
    sized = tmp_path / "nine.sgf"
    sized.write_text("(;GM[1]SZ[9];B[ee])")
    assert s.reply(f"loadsgf {sized}") == "? cannot load file\n\n"
    assert s.reply("move_history") == "= white D4\nblack Q4\nwhite D16\nblack Q16\n\n"


def test_play_legality_agrees_with_gnugo(gnugo):
    """Random crowded games in a corner (captures, kos, suicides): our `play` accepts exactly
    the moves GNU Go calls legal, and the stones on the board stay the same."""
    import random

    from leelaz.game.coords import ALL_VERTICES, EMPTY, gtp_vertex, parse_gtp_vertex

    proc = subprocess.Popen([gnugo, "--mode", "gtp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)

    def gnu(line: str) -> str:
        proc.stdin.write(line + "\n")
        reply = ""
        while not reply.endswith("\n\n"):
            reply += proc.stdout.readline()
        return reply

    def our_stones(s, color):
        board = s.engine.state.board
        return sorted(gtp_vertex(v) for v in ALL_VERTICES if board.square[v] == color)

    rng = random.Random(5)
    refused = refused_empty = 0
    try:
        for game in range(6):
            s = Session()
            gnu("clear_board")
            colours = "bw"
            for n in range(300):
                colour = colours[n % 2]
                vertex = "abcdef"[rng.randrange(6)] + str(rng.randint(1, 6))
                legal = gnu(f"is_legal {colour} {vertex}") == "= 1\n\n"
                empty = s.engine.state.board.square[parse_gtp_vertex(vertex)] == EMPTY
                ours = s.reply(f"play {colour} {vertex}")
                assert ours == ("= \n\n" if legal else "? illegal move\n\n"), (game, n, vertex)
                if legal:
                    assert gnu(f"play {colour} {vertex}") == "= \n\n"
                else:
                    refused += 1
                    refused_empty += empty
                    s.reply(f"play {colour} pass")
                    gnu(f"play {colour} pass")
                if n % 25 == 0:
                    for c, name in ((0, "black"), (1, "white")):
                        theirs = sorted(gnu(f"list_stones {name}")[2:].split())
                        assert our_stones(s, c) == theirs, (game, n)
    finally:
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        proc.wait(timeout=10)
    assert refused > 50 and refused_empty > 10, (refused, refused_empty)  # suicides, kos


def test_commands_match_by_exact_name():  # LZ matches prefixes: `playx b d4` plays there
    s = Session()
    assert s.reply("playx b d4") == "? unknown command\n\n"
    assert s.reply("pla b d4") == "? unknown command\n\n"
    assert s.reply("move_history") == "= \n\n"
    assert s.reply("list_commands foo").startswith("= protocol_version\nname\n")
    assert s.reply("name extra") == "= Leela Zero\n\n"
