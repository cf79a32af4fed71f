"""The root command lists the stages' commands from a table and imports a stage only to run its command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_mcp.cli import COMMANDS, load_command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_table_matches_the_registered_command(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    first_line = " ".join((command.help or "").strip().split("\n\n")[0].split())
    assert COMMANDS[name][1] == first_line


def test_help_and_version_import_no_stage() -> None:
    probe = (
        "import sys\n"
        "from envscaler_mcp.cli import main\n"
        "for args in (['--help'], ['--version']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('mcp', 'envscaler_mcp.harness', 'envscaler_mcp.providers', 'envscaler_mcp.launch',"
        " 'pydantic') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "HEAVY []" in result.stdout


def test_eval_help_imports_no_stage() -> None:
    # the eval options' choices come from envscaler_mcp/_choices.py, not from the stages that use them
    probe = (
        "import sys\n"
        "from envscaler_mcp.cli import main\n"
        "try:\n"
        "    main(['eval', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('mcp', 'envscaler_mcp.harness', 'envscaler_mcp.providers', 'envscaler_mcp.launch',"
        " 'envscaler_mcp.scoring') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "--episode-process" in result.stdout and "HEAVY []" in result.stdout


def test_eval_choices_are_the_stages_own_types() -> None:
    from typing import get_args, get_type_hints

    from envscaler_mcp import launch
    from envscaler_mcp.cli.eval_options import EvalOptions
    from envscaler_mcp.harness import models
    from envscaler_mcp.scoring import metrics

    hints = {name: get_args(hint)[0] for name, hint in get_type_hints(EvalOptions, include_extras=True).items()}
    assert hints["transport"] is launch.Transport
    assert hints["episode_process"] is launch.EpisodeProcess
    assert hints["success"] is metrics.SuccessRule is models.SuccessRule
    assert hints["observation"] is models.ObservationMode
    assert get_args(hints["mode"]) == ("auto", *get_args(models.Mode))


def test_every_eval_option_reaches_the_run_config(tmp_path: Path) -> None:
    from envscaler_mcp.cli.eval_options import EvalOptions

    config = EvalOptions(env=["a,b", " c "], agent="oracle", user="scripted", scenario_ids=["s1, s2"], trials=3,
                         concurrency=2, transport="http", episode_process="fork", validator_timeout=0.5,
                         max_steps=7, timeout=9.0, infra_retries=1, server_timeout=5.0, success="state",
                         observation="off", temperature=0.3, max_shown_result=101, max_tool_result=102,
                         max_state=103, max_answer=104, max_transcript=1005, scenarios=tmp_path / "s.jsonl",
                         limit=4, ray="local", ray_workers=2, progress=False).run_config()
    assert config.envs == ["a", "b", "c"] and config.scenario_ids == ["s1", "s2"]
    assert config.user == "scripted" and config.episode.mode == "conversation"  # auto: a user is given
    assert (config.trials, config.concurrency, config.transport, config.episode_process) == (3, 2, "http", "fork")
    assert (config.validator_timeout_s, config.limit, config.ray, config.ray_workers) == (0.5, 4, "local", 2)
    assert config.scenarios_file == str(tmp_path / "s.jsonl") and config.progress is False
    episode = config.episode
    assert (episode.max_steps, episode.timeout_s, episode.infra_retries, episode.server_timeout_s) == (7, 9.0, 1, 5.0)
    assert (episode.success, episode.observation, episode.agent_settings.temperature) == ("state", "off", 0.3)
    limits = episode.limits
    assert (limits.shown_result_chars, limits.tool_result_chars, limits.state_bytes, limits.answer_chars,
            limits.transcript_chars) == (101, 102, 103, 104, 1005)
    # a user given in task mode is not seated
    assert EvalOptions(agent="oracle", user="scripted", mode="task").run_config().user is None


def test_concurrency_defaults_to_more_episodes_for_seats_that_are_this_machines_cpu() -> None:
    from envscaler_mcp.cli.eval_options import EvalOptions

    def concurrency(**options: object) -> int:
        return EvalOptions(**options).run_config().concurrency  # type: ignore[arg-type]

    assert concurrency(agent="oracle") == concurrency(agent=" mock ") == 8
    assert concurrency(agent="oracle", user="scripted") == 8  # the scripted user is no model either
    assert concurrency(agent="openai/gpt-4.1") == concurrency(agent="local/default") == 4
    assert concurrency(agent="oracle", user="openai/gpt-4.1") == 4  # a model's seat paces its API
    assert concurrency(agent="oracle", user="openai/gpt-4.1", mode="task") == 8  # a user not seated
    assert concurrency(agent="oracle", concurrency=3) == concurrency(agent="openai/gpt-4.1", concurrency=3) == 3
    from envscaler_mcp.harness.config import RunConfig  # the same rule for a run configured in Python

    assert RunConfig(agent="oracle").concurrency == 8 and RunConfig(agent="mock", user="openai/x").concurrency == 4
