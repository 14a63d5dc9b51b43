"""leelaz bench selfplay on the CPU: both engines play, same net, same run (the figures
themselves belong to the benchmark, not to a test)."""

from __future__ import annotations

from leelaz.selfplay.bench import bench_selfplay, reference_selfplay


def test_bench_runs_both_engines_on_the_cpu(random_weights, lz_binary):
    lines: list[str] = []
    rows = bench_selfplay(random_weights(1, 8), seconds=3, visits=4, parallel=(2,),
                          workers=(1,), reference=lz_binary, reference_k=(1,), cpu_only=True,
                          say=lines.append)
    assert rows["ours"][0].moves > 0 and rows["reference"][0].moves > 0
    assert rows["ours"][0].evaluations > 0 and rows["peak"] > 0
    assert "ratio" in rows and lines[-1].startswith("best: ")
    assert any("Leela Zero 0.17 x1" in line and "--cpu-only" in line for line in lines)


def test_reference_driver_plays_genmove_loops_in_k_processes(random_weights, lz_binary):
    row = reference_selfplay(lz_binary, random_weights(1, 8), processes=2, seconds=3,
                             visits=2, cpu_only=True)
    assert row.moves > 10 and row.seconds >= 3
