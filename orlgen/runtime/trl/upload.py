"""Training rollouts uploaded to OpenReward's rollout API from a TRL `GRPOTrainer` run (opt-in),
so a run can be read where its environment lives, as `orlgen eval --upload` does for an eval.

    upload = RolloutUpload("helpdesk-grpo-1")   # $OPENREWARD_API_KEY; the API as the SDK finds it
    trainer = GRPOTrainer(..., environment_factory=helpdesk.HelpdeskEnv,
                          reward_funcs=[*helpdesk.reward_funcs, upload.reward_func])
    trainer.add_callback(upload.callback(trainer))

Where it hooks in, and why there. It takes two hooks because no single one sees everything:

- `reward_func`, a reward function that scores nothing (it returns None for every rollout, as
  `submit_final_message` does), is the seam that sees the conversation as the trainer saw it:
  GRPOTrainer calls it once per generation with each rollout's `prompts` (the row's messages
  with `reset`'s observation appended), `completions` (the model's turns, its parsed tool calls
  and the tool results TRL appended), the `environments` (the adapter: task, step rewards,
  outcome, the episode's secret values) and `trainer_state` (the global step). A
  `TrainerCallback` sees none of that, and an adapter sees its tool calls but never the model's
  text. Put it last in `reward_funcs`: a terminal env's reward is recorded by
  `submit_final_message`, which must have run. The reward sent is the environment's, by its rule
  (what `get_reward()` returns for the rollout; None when unscored); reward functions of your
  own are not in it (TRL's completions table has them). Each batch it also logs the upload
  counts through TRL's public `log_metric` hook (`orlgen/upload_sent`, `orlgen/upload_failed`,
  `orlgen/upload_dropped`, `orlgen/upload_pending`: this rank's, so far, averaged over ranks by
  TRL). TRL gives it a column, empty (`rewards/upload_rollouts/mean` is None in the log).
- `callback(trainer)`, a `TrainerCallback`, flushes at train end with a bounded wait
  (`flush_timeout`), one line saying what was not sent. It writes nothing to the trainer; it
  keeps the trainer, to tell training rollouts from evaluation ones (below).

The recording on the training thread is a few references per rollout appended to a bounded
queue: masking, event building and posting run on the uploader's thread
(`orlgen.runtime.ors.uploader`, whose docstring gives the rollout names, resumable per run and
rank: `{run_name}/rank{rank}/step{global_step}/{index}`). A full queue drops (counted, one
warning line), a failed post is one line: training never waits or fails for an upload.

`AsyncGRPOTrainer` passes reward functions no environments: there nothing is recorded (one
warning line). GRPOTrainer's own evaluation (`eval_strategy`) calls reward functions too, and
says nothing of its mode to them: they are told apart as TRL tells them (`trainer.model.training`
is False while it evaluates), and an evaluation's rollouts are not uploaded (one info line, the
first time): a run's rollouts on the platform are what it trained on. Without the callback the
trainer is unknown and every rollout is uploaded. The other trainers' rollouts go through the
same `RolloutUploader.upload` (docs/training.md, "Uploading training rollouts").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..ors.uploader import RolloutUploader, UploadStats

logger = logging.getLogger("orlgen")

__all__ = ["RolloutUpload"]


class RolloutUpload:
    """Uploads the rollouts of a GRPOTrainer run named `run_name` (the same name when the run is
    resumed). Options: `RolloutUploader`'s (`target`, `rank`, `model`, `secrets`, `max_queue`,
    `timeout`, `retry`, `sampling`), or an `uploader` made elsewhere; `flush_timeout`: how long
    the train end waits for the queue to drain (seconds)."""

    def __init__(
        self,
        run_name: str = "",
        *,
        uploader: RolloutUploader | None = None,
        flush_timeout: float = 30.0,
        **options: Any,
    ) -> None:
        self.uploader = uploader if uploader is not None else RolloutUploader(run_name, **options)
        self.flush_timeout = flush_timeout
        self.final: UploadStats | None = None  # the counts at the last train end
        self._warned_no_environments = False
        self._trainer: Any = None  # given by `callback`
        self._said_evaluation = False

        def upload_rollouts(
            prompts: Sequence[Any] | None = None,
            completions: Sequence[Any] | None = None,
            environments: Sequence[Any] | None = None,
            trainer_state: Any = None,
            log_metric: Callable[[str, float], None] | None = None,
            **_: Any,
        ) -> list[None]:
            """Not a score: queues each finished rollout for upload; None for every rollout."""
            count = len(completions if completions is not None else prompts or ())
            if self._evaluating():
                return [None] * count
            self._record(prompts or [], completions or [], environments, getattr(trainer_state, "global_step", 0))
            if log_metric is not None:  # TRL's public hook: averaged into the step's log line
                stats = self.uploader.stats
                for name in ("sent", "failed", "dropped", "pending"):
                    log_metric(f"orlgen/upload_{name}", float(getattr(stats, name)))
            return [None] * count

        self.reward_func = upload_rollouts

    def __repr__(self) -> str:
        return f"RolloutUpload({self.uploader!r})"

    @property
    def stats(self) -> UploadStats:
        return self.uploader.stats

    def _evaluating(self) -> bool:
        """Whether the trainer is evaluating (its model in eval mode, as TRL's own `mode` reads it);
        says once that an evaluation's rollouts are not uploaded."""
        model = getattr(self._trainer, "model", None)
        if model is None or getattr(model, "training", True):
            return False
        if not self._said_evaluation:
            self._said_evaluation = True
            logger.info("rollout upload: the trainer's evaluation rollouts are not uploaded, only training's")
        return True

    def _record(
        self, prompts: Sequence[Any], completions: Sequence[Any], envs: Sequence[Any] | None, step: int
    ) -> None:
        if envs is None:
            if not self._warned_no_environments:
                self._warned_no_environments = True
                logger.warning("rollout upload: the trainer passes reward functions no environments: nothing recorded")
            return
        for prompt, completion, env in zip(prompts, completions, envs, strict=False):
            try:
                rollout, secrets = _rollout(prompt, completion, env)
            except Exception as exc:  # an environment of another kind: recorded nowhere, training goes on
                logger.warning("rollout upload: a rollout of %s was not recorded: %s", type(env).__name__, exc)
                continue
            self.uploader.upload(rollout, global_step=step, secrets=secrets)

    def callback(self, trainer: Any) -> Any:
        """The `TrainerCallback` that flushes at train end (a bounded wait, `flush_timeout`):
        `trainer.add_callback(upload.callback(trainer))`. Takes the rank from the trainer's
        accelerator when nothing was recorded yet; keeps the trainer, to skip its evaluation's rollouts,
        and writes nothing to it."""
        from transformers import TrainerCallback

        self._trainer = trainer
        accelerator = getattr(trainer, "accelerator", None)
        if accelerator is not None and self.uploader.stats.recorded == 0:  # names not yet given
            self.uploader.rank = int(accelerator.process_index)
        upload = self

        class RolloutUploadCallback(TrainerCallback):
            def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                upload.final = upload.uploader.close(upload.flush_timeout)

        return RolloutUploadCallback()


def _rollout(prompt: Any, completion: Any, env: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """One rollout as the uploader takes it, and the secret values its episode masks."""
    episode = env._episode
    task = episode.task
    state = episode.state
    if isinstance(prompt, str):  # a text dataset: one turn each
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": str(completion)}]
    else:
        messages = [*prompt, *completion]
    rollout = {
        "env": env.spec.target.env,
        "split": task[0] if task else None,
        "task_index": task[1] if task else None,
        "messages": messages,
        "reward": episode.standing_reward(),
        "rewards": list(state.rewards),
        "outcome": state.outcome,
        "tool_calls": state.tool_calls,
        "tool_errors": state.tool_errors,
    }
    return rollout, episode.masked_values
