"""What the model writes cannot move an episode out of the scores: final answers and tool arguments that are
not valid Unicode, or very large, are scored as the model's (a failed check), never recorded as
infrastructure, and never stop the run."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import calls
from tests.harness.test_transcript_items import READ_ONLY

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("turns", [
    ["Order O-1001 totals $25.50 \ud800."],  # a lone surrogate: what a provider's JSON "\ud800" decodes to
    [calls(("get_order", {"order_id": "O-1001\udfff"})), "Order O-1001 totals $25.50."],
], ids=["answer", "arguments"])
async def test_unencodable_model_output_is_scored_not_infra(server: Any, checker: SandboxChecker,
                                                            turns: list[Any]) -> None:
    result = await run_episode(READ_ONLY, source=server, agent=MockProvider(turns), checker=checker)
    assert result.status != "infra_error", result.infra_reason
    assert result.scorable and result.score is not None
    result.model_dump_json()  # the record can be written
