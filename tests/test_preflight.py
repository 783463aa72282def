"""`orlgen preflight`: the sessions a run will hold, per process and in all, from the trainer's
settings and the budget. The GRPO numbers are the ones tests/test_ranks.py measures on a real
two-rank run (4 rows per rank, 8 sessions in all, 4 held at once per rank)."""

from __future__ import annotations

from tests.support.cli import invoke

TWO_RANKS = ["--world-size", "2", "--per-device-batch", "4", "--num-generations", "8"]


def preflight(*args, env=None):
    return invoke("preflight", *args, env=env)


def test_grpo_on_two_ranks_holds_each_process_rows_open():
    result = preflight(*TWO_RANKS)
    assert result.exit_code == 0, result.output
    assert "peak sessions per process: 4\n" in result.output and "peak sessions for the run: 8\n" in result.output


def test_a_budget_below_a_process_rows_is_refused_with_the_budget_that_works():
    result = preflight(*TWO_RANKS, env={"ORLGEN_MAX_SESSIONS": "4"})
    assert result.exit_code == 1
    assert "budget share per rank: 2, 2" in result.output
    assert "set the budget to at least 8" in result.output


def test_prefetch_past_a_process_group_rows_is_named():
    result = preflight(*TWO_RANKS, "--prefetch", "8", "--max-sessions", "8")
    assert result.exit_code == 0
    assert "pass prefetch=4" in result.output and "peak sessions per process: 4\n" in result.output


def test_the_async_trainer_opens_every_session_in_one_worker():
    result = preflight("--loop", "async", *TWO_RANKS, "--max-sessions", "16")
    assert result.exit_code == 0
    assert "processes opening sessions: 1\n" in result.output
    assert "peak sessions for the run: 16\n" in result.output  # 32 in flight by default, capped by the budget
    assert "rollouts wait for slots" in result.output


def test_settings_grpo_cannot_run_are_one_line_errors():
    result = preflight("--world-size", "3", "--per-device-batch", "3", "--num-generations", "8")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "orlgen: error: the generation batch (3 x 1 x 3 = 9) is not a multiple of num_generations (8), "
        "which GRPOTrainer requires"
    ]


def test_the_old_trainer_flag_still_chooses_the_loop_and_says_its_new_name():
    result = preflight("--trainer", "async", *TWO_RANKS, "--max-sessions", "16")
    assert result.exit_code == 0
    assert "processes opening sessions: 1\n" in result.output
    assert "orlgen: warning: --trainer async is now --loop async" in result.output
