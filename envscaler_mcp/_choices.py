"""The closed sets of values a run's options take, named once for the stages and the command line.

Typing only: the command line declares its choices from these (`eval --help` and a bad choice load no stage),
and each stage re-exports the ones it owns (launch.Transport, launch.EpisodeProcess, scoring.metrics.SuccessRule,
harness.models.Mode and ObservationMode, synth.scen.pipeline.MutationGuard and PlanFirst).
"""

from __future__ import annotations

from typing import Literal

Transport = Literal["pipe", "http", "stdio", "memory"]
"""How the harness reaches a server: one process per environment over its stdin/stdout, one shared HTTP server,
one process per episode, or in process."""

EpisodeProcess = Literal["auto", "shared", "fork"]
"""Whether a server's episodes share its process or each runs in a process forked for it."""

SuccessRule = Literal["checklist+state+observation", "checklist+state", "checklist+observation", "checklist", "state",
                      "observation", "state+observation", "both"]
"""The checks an episode must not fail to succeed, joined by '+'; 'both' is an older name of 'checklist+state'."""

ObservationMode = Literal["auto", "on", "off"]
"""Where the observation check applies: where the reference makes a read-only call, wherever it has results, never."""

Mode = Literal["task", "conversation"]
"""An episode with the task given at once, or revealed by a simulated user."""

ModeChoice = Literal["auto", Mode]
"""`eval --mode`: a Mode, or `auto` (conversation when a simulated user is given, else task)."""

SkelStage = Literal["mine", "model", "check", "all"]
"""The SkelBuilder stages `synth envs` runs (`all`: mine, model and check in turn)."""

MutationGuard = Literal["validators", "state"]
"""Who must catch each mutation probe of a synthesized scenario: its validators alone, or they or the state check."""

PlanFirst = Literal["fallback", "first", "off"]
"""When `synth scenarios` makes an item plan-first (plan_first.py): after the model-first item is dropped, before
the model-first path (then it is the fallback), or never."""

PlanFirstOption = Literal["auto", "fallback", "first", "off"]
"""`synth scenarios --plan-first`: a PlanFirst, or `auto`: `first` on the embedded model (local/…), else
`fallback`."""


def parse_workers(value: str) -> int | None:
    """`--workers N|auto` (eval, scenarios check): N worker processes, or None for auto; ValueError with the
    message for anything else."""
    if value.strip().lower() == "auto":
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"--workers: '{value}' is neither a number of processes (1 or more) nor auto")
    return number


CPU_SEATS = ("oracle", "mock")
"""Agent seats whose work is this machine's CPU (a model behind an API waits instead)."""

# `eval --concurrency` by default. A CPU seat's episodes only wait for servers and validator processes of this
# machine: more of them at once keep the CPUs busy while servers start and stop (benchmarks/README.md,
# "Concurrency of CPU seats"). A model's seat keeps 4: it also paces the requests sent to its API.
CPU_SEAT_CONCURRENCY = 8
MODEL_SEAT_CONCURRENCY = 4


def cpu_seat(agent: str, user: str | None) -> bool:
    """Whether a run's seats are all this machine's CPU: an oracle or mock agent, no simulated user or the
    scripted one."""
    return agent.strip() in CPU_SEATS and user in (None, "scripted")


def default_concurrency(agent: str, user: str | None) -> int:
    """Episodes at the same time when `eval --concurrency` is not given."""
    return CPU_SEAT_CONCURRENCY if cpu_seat(agent, user) else MODEL_SEAT_CONCURRENCY
