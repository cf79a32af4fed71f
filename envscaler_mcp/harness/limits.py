"""Size caps on untrusted output: what an environment returns (tool results, the final state) and what the
agent writes (its answer), as shown to the agent and as stored in results.jsonl.

| cap | default | over it | whose fault |
|---|---|---|---|
| `shown_result_chars` (`--max-shown-result`) | 50,000 | the agent sees the first part and a marker; the full length is recorded (`Message.full_chars`) | nobody's: long results are legitimate |
| `tool_result_chars` (`--max-tool-result`) | 5,000,000 | the episode is `infra_error` with the reason | the environment's |
| `state_bytes` (`--max-state`) | 5,000,000 | the episode is `infra_error` with the reason | the environment's |
| `answer_chars` (`--max-answer`) | 50,000 | `model_error` (`answer_too_long: ...`), scored on the answer cut to the cap | the model's |
| `transcript_chars` (`--max-transcript`) | 2,000,000 | each message's text cut to an equal share in the stored record | - |
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from envscaler_mcp._json import State, encode_json
from envscaler_mcp.errors import OutputTooLarge
from envscaler_mcp.providers.base import Message


class OutputLimits(BaseModel):
    """Size caps on untrusted output (the table in harness/limits.py)."""

    shown_result_chars: int = Field(50_000, ge=100, description="Characters of a tool result shown to the agent; "
                                    "longer results are cut, with a marker saying how long they were.")
    tool_result_chars: int = Field(5_000_000, ge=100, description="Characters of a tool result beyond which the "
                                   "environment is at fault: the episode is infra_error with the reason.")
    state_bytes: int = Field(5_000_000, ge=100, description="Bytes of a final state's JSON beyond which the "
                             "environment is at fault: the episode is infra_error with the reason.")
    answer_chars: int = Field(50_000, ge=100, description="Characters of the agent's final answer; a longer one is "
                              "the model's fault (model_error 'answer_too_long'), scored cut to this length.")
    transcript_chars: int = Field(2_000_000, ge=1_000, description="Characters of message text stored per episode in "
                                  "results.jsonl; over it, each message's text is cut to an equal share.")


def cut(text: str, limit: int, what: str) -> str:
    """`text` cut to `limit` characters with a marker naming its full length (unchanged when it fits)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... cut: {what} has {len(text):,} characters; the first {limit:,} are shown]"


def shown_result(message: Message, limits: OutputLimits) -> Message:
    """A tool message as the agent sees it: cut to `shown_result_chars`. A result past `tool_result_chars`
    raises OutputTooLarge (the environment's fault)."""
    size = len(message.content)
    if size > limits.tool_result_chars:
        raise OutputTooLarge(f"the tool '{message.name}' returned {size:,} characters, more than the cap of "
                             f"{limits.tool_result_chars:,} (--max-tool-result)")
    if size <= limits.shown_result_chars:
        return message
    return message.model_copy(update={"content": cut(message.content, limits.shown_result_chars, "the result"),
                                      "full_chars": size})


def check_state(state: State | None, limits: OutputLimits) -> None:
    """Raise OutputTooLarge when the final state's JSON is past `state_bytes` (the environment's fault)."""
    if state is None:
        return
    size = len(encode_json(state))
    if size > limits.state_bytes:
        raise OutputTooLarge(f"the final state is {size:,} bytes of JSON, more than the cap of "
                             f"{limits.state_bytes:,} (--max-state)")


def stored_messages(messages: list[Message], limits: OutputLimits) -> list[Message]:
    """The messages as stored in results.jsonl: when their text is past `transcript_chars`, each message's
    text is cut to an equal share of it (the full length kept in `full_chars`)."""
    total = sum(len(m.content) for m in messages)
    if total <= limits.transcript_chars or not messages:
        return messages
    share = max(200, limits.transcript_chars // len(messages))
    return [m if len(m.content) <= share else
            m.model_copy(update={"content": cut(m.content, share, "this message"),
                                 "full_chars": m.full_chars or len(m.content)})
            for m in messages]
