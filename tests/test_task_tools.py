"""Task-only tools are found by the default probes (parity and modulo patterns), and a call to
one on a task that does not offer it is refused with one line and never sent (an ORS server would
run it). A real loopback server (`tests/support/envs/parity.py`) through the real SDK."""

from __future__ import annotations

import pytest
from orlgen.capture.live import capture, probe_indices
from orlgen.render.jobs import generate
from orlgen.review.files import write_files

from tests.support.modules import load_module

PARITY = "tests.support.envs.parity:Parity"


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    out = tmp_path_factory.mktemp("parity")
    snapshot = capture(PARITY)
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    return snapshot, load_module(out / "parity.py")


@pytest.fixture
def parity_url(serve):
    return serve(PARITY)


def test_default_probes_find_tools_offered_on_odd_and_on_every_third_task(parity):
    snapshot, _ = parity
    assert len(snapshot.probed_tasks) == 3  # no more probes than before
    offered = {tool.name: [ref.index for ref in tool.offered_on] for tool in snapshot.tools if not tool.shared}
    assert offered == {"peek": [1, 11], "bonus": [11]}


@pytest.mark.parametrize("total", [2, 3, 7, 12, 60, 300, 1001])
def test_probes_meet_every_residue_mod_2_and_3_within_three_probes(total):
    indices = probe_indices(total, 3)
    assert len(indices) == min(3, total) and len(set(indices)) == len(indices)
    assert all(0 <= i < total for i in indices)
    for modulus in (2, 3):
        if total >= modulus + (modulus == 3):
            assert {i % modulus for i in indices} == set(range(modulus)), (total, modulus, indices)
    assert max(indices) >= total // 2 - 6 or total < 12  # still reaches into the split


def test_a_task_only_tool_on_a_probed_task_that_lacks_it_is_refused_without_a_request(parity, parity_url):
    _, module = parity
    env = module.environment_factory(base_url=parity_url)
    env.reset(task_index=0)  # probed; offers neither peek nor bonus
    assert env.peek() == "Error: peek is not offered on this task (train[0]); it was not run"
    assert env.bonus() == "Error: bonus is not offered on this task (train[0]); it was not run"
    assert env.calls() == "1"  # neither refused call reached the server
    assert env.outcome == "running" and env.tool_errors == 2
    env.reset(task_index=1)  # probed; offers peek
    assert env.peek() == "peeked at task 1"
    env.reset(task_index=3)  # not probed: the session's tool list says it offers peek
    assert env.peek() == "peeked at task 3"
    # Not probed and not offered: an ORS server would run the call anyway; the session's tool
    # list (read once) says no, so nothing is sent.
    env.reset(task_index=4)
    assert env.peek() == "Error: peek is not offered on this task (train[4]); it was not run"
    assert env.peek().startswith("Error: peek is not offered") and env.calls() == "1"
    env.get_reward()


def test_the_method_docstring_says_which_probed_tasks_offer_it(parity):
    _, module = parity
    doc = module.environment_factory.peek.__doc__
    assert "Offered on some tasks only: train[1], train[11] of the tasks probed (train[0], train[1], train[11])." in doc
