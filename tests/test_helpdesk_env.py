"""Sanity checks of the helpdesk example env, served on loopback and driven by the openreward SDK."""

from concurrent.futures import ThreadPoolExecutor

import pytest

openreward = pytest.importorskip("openreward")

from orlgen.serve import serving  # noqa: E402

from examples.helpdesk import Helpdesk, make_task, scripted_solution  # noqa: E402

SHARED_TOOLS = {
    "list_policies",
    "search_orders",
    "get_order",
    "update_shipping",
    "issue_refund",
    "cancel_order",
    "send_reply",
    "submit_resolution",
}


@pytest.fixture(scope="module")
def env():
    with serving(Helpdesk) as url:
        client = openreward.OpenReward(base_url=url)
        try:
            yield client.environments.get("helpdesk", base_url=url)
        finally:
            client.close()


def _indices(split: str, count: int = 10) -> list[int]:
    """`count` task indices of `split`, round-robin over issue kinds and decline/VIP variants."""
    buckets: dict[tuple, list[int]] = {}
    for i, task in enumerate(Helpdesk.list_tasks(split)):
        key = (task["issue"], task["expected"]["resolved"], task["expected"]["escalation_priority"] is not None)
        buckets.setdefault(key, []).append(i)
    picked: list[int] = []
    while len(picked) < count:
        for key in sorted(buckets, key=str):
            if buckets[key] and len(picked) < count:
                picked.append(buckets[key].pop(0))
    return picked


def _play(env, split: str, index: int, calls: list[tuple[str, dict]]):
    """Run the calls in one session; return the last call's output."""
    with env.session(split=split, index=index) as session:
        assert session.get_prompt()[0].text
        for name, args in calls:
            out = session.call_tool(name, args)
            assert not out.blocks[0].text.startswith("error"), (name, out.blocks[0].text)
        return out


def test_splits_and_sizes(env):
    assert set(env.list_splits()) == {"train", "test"}
    assert env.num_tasks("train") == 300
    assert env.num_tasks("test") == 60


def test_tasks_are_deterministic_and_varied():
    tasks = Helpdesk.list_tasks("train")
    assert tasks[17] == make_task("train", 17)
    assert Helpdesk.list_tasks("test")[0]["ticket_id"] == "TE-0001"
    assert {type(t["sla_hours"]) for t in tasks} == {int, str}
    assert {t["issue"] for t in tasks} == {"refund", "address_change", "status_query", "cancellation"}
    assert {t["difficulty"] for t in tasks} == {"easy", "medium", "hard"}


def test_tool_lists(env):
    assert {t.name for t in env.list_tools()} == SHARED_TOOLS
    tasks = Helpdesk.list_tasks("train")
    vip = next(i for i, t in enumerate(tasks) if t["customer"]["tier"] == "vip")
    standard = next(i for i, t in enumerate(tasks) if t["customer"]["tier"] == "standard")
    for index, offered in ((vip, True), (standard, False)):
        with env.session(split="train", index=index) as session:
            names = {t.name for t in session.list_tools()}
            assert SHARED_TOOLS <= names
            assert ("escalate" in names) is offered
            assert "VIP escalation" in session.call_tool("list_policies", {}).blocks[0].text


@pytest.mark.parametrize("split", ["train", "test"])
def test_scripted_solution_wins(env, split):
    indices = _indices(split)
    tasks = [Helpdesk.list_tasks(split)[i] for i in indices]
    assert len({t["issue"] for t in tasks}) >= 3
    # Episodes run side by side (one session each) to keep the test fast.
    with ThreadPoolExecutor(max_workers=len(indices)) as pool:
        outs = list(pool.map(lambda i, t: _play(env, split, i, scripted_solution(t)), indices, tasks))
    for index, out in zip(indices, outs, strict=False):
        assert out.finished and out.reward == 1.0, (split, index, out.blocks[0].text)


def test_wrong_actions_lose_reward(env):
    tasks = Helpdesk.list_tasks("train")
    refund = next(i for i, t in enumerate(tasks) if t["expected"]["action"] == "refund")
    calls = scripted_solution(tasks[refund])
    # Wrong reason on the refund: the action check fails.
    wrong = [(n, {**a, "reason": "not_delivered"} if n == "issue_refund" else a) for n, a in calls]
    out = _play(env, "train", refund, wrong)
    assert out.finished and out.reward == 0.5
    # Skipping the action but claiming success.
    out = _play(env, "train", refund, [(n, a) for n, a in calls if n != "issue_refund"])
    assert out.reward == 0.5
    # A declined request reported as resolved.
    declined = next(i for i, t in enumerate(tasks) if not t["expected"]["resolved"])
    calls = scripted_solution(tasks[declined])
    calls[-1] = ("submit_resolution", {"summary": "done", "resolved": True})
    out = _play(env, "train", declined, calls)
    assert out.finished and 0.0 < out.reward < 1.0


def test_escalate_is_refused_on_standard_tickets(env):
    tasks = Helpdesk.list_tasks("train")
    standard = next(i for i, t in enumerate(tasks) if t["customer"]["tier"] == "standard")
    with env.session(split="train", index=standard) as session:
        out = session.call_tool("escalate", {"priority": 1, "reason": "angry"})
        assert out.blocks[0].text.startswith("error") and out.reward is None
