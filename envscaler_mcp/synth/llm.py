"""Prompt templates and the one way synthesis talks to a model: render, call, parse, retry with the error.

Templates live in `envscaler_mcp/synth/prompts/<group>/<step>.md` (Jinja2, StrictUndefined). A line
`<!-- user -->` separates the system message (above) from the user message (below); a template without
it is a single user message.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

import jinja2

from envscaler_mcp._json import JSONObject
from envscaler_mcp._usage import Usage
from envscaler_mcp.errors import ModelFault, SynthesisError
from envscaler_mcp.providers.base import GenerationSettings, Message, Provider
from envscaler_mcp.synth._common_fit import context_window, cut_to_fit, estimate_tokens, fit_prompt
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth._common_progress import current_step

PROMPTS_DIR = Path(__file__).parent / "prompts"
USER_MARKER = "<!-- user -->"

T = TypeVar("T")
MIN_SHOWN = 256  # tokens of a refused answer a retry shows at least (its head and tail)
REPEAT_TEMPERATURE = 0.8  # a request sent again word for word is sampled at least this warm, with its own seed


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_prompt(name: str, **context: Any) -> list[Message]:
    """Render template `name` (e.g. 'skel/judge') into [system, user] messages."""
    text = _env().get_template(f"{name}.md").render(**context)
    if USER_MARKER in text:
        system, user = text.split(USER_MARKER, 1)
        return [Message(role="system", content=system.strip()), Message(role="user", content=user.strip())]
    return [Message(role="user", content=text.strip())]


def templates_digest(group: str) -> str:
    """Short sha256 over every template of a group, so a prompt edit shows up in provenance."""
    digest = hashlib.sha256()
    for path in sorted((PROMPTS_DIR / group).glob("*.md")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:10]


class UsageMeter:
    """Adds up the usage of model calls, overall and per seat (generator, tester, checker …); also counts the
    requests sent through it (by content), so `ask(vary_repeats=True)` can tell a request it already sent."""

    def __init__(self) -> None:
        self.total = Usage()
        self.by_seat: dict[str, Usage] = {}
        self.sent: Counter[str] = Counter()

    def add(self, usage: Usage, seat: str = "generator") -> None:
        """Count one call's usage."""
        self.total = self.total + usage
        self.by_seat[seat] = self.by_seat.get(seat, Usage()) + usage


class StepFailed(SynthesisError):
    """A synthesis step gave no usable answer after its retries. `reason` is the last problem seen; `kind`
    says what went wrong: 'answer' (the answers never passed the parser and checks) or a ModelFault kind
    ('context_overflow', 'refusal', 'invalid_request': the provider rejected the model's request)."""

    def __init__(self, step: str, reason: str, attempts: int, kind: str = "answer") -> None:
        super().__init__(f"step '{step}' failed after {attempts} attempt(s): {reason}")
        self.step = step
        self.reason = reason
        self.attempts = attempts
        self.kind = kind


RETRY_TEMPLATE = (
    "Your answer could not be used: {error}\n\n"
    "Answer again, complete and in exactly the required format (all sections, nothing else)."
)
COPIED_TEMPLATE = (  # the refused answer not shown again: the model copied it word for word when it was
    "An earlier answer to this request could not be used: {error}\n"
    "It was given {times} times word for word. Write a new answer that fixes this (do not repeat the earlier "
    "one), complete and in exactly the required format (all sections, nothing else)."
)


async def ask(
    provider: Provider,
    step: str,
    context: dict[str, Any],
    accept: Callable[[str], T],
    *,
    meter: UsageMeter,
    seat: str = "generator",
    retries: int = 2,
    settings: GenerationSettings | None = None,
    template: str | None = None,
    schema: JSONObject | None = None,
    ladder: Sequence[Mapping[str, Any]] = (),
    vary_repeats: bool = False,
) -> T:
    """Ask the model for step `step` and return `accept(answer text)`.

    `accept` parses and validates; when it raises AnswerFormatError (or ValueError) the error goes back
    to the model in a follow-up message, up to `retries` times. Then StepFailed is raised. A retry shows
    only the last refused answer and its error (not every earlier one), so the conversation stays the size of
    one exchange. A ModelFault (context overflow, refusal) also ends the step with StepFailed: the item is
    dropped, the run goes on. Other provider errors propagate unchanged (the item is not finished and a
    rerun will try it again).

    `schema` asks for structured output: the answer is constrained to this JSON schema where the provider
    can (constrained decoding, `json_schema` response format, a forced tool); `accept` still reads and
    validates it, so a provider that ignores the schema falls back to the tolerant reader.

    `ladder` gives the shrinkable parts of the context, richest first (`synth._common_fit`): when the provider
    says its context window, the prompt is rendered at the first rung that leaves room for the answer (its
    `max_tokens`, at most half the window); a prompt that fits at no rung ends the step as a context overflow
    before any call.

    `vary_repeats`: a request whose messages and settings were already sent through `meter` (the model repeated
    its refused answer, so the retry, or a repair round, asks word for word what was asked before) is sent at
    temperature REPEAT_TEMPERATURE (or the step's, if warmer) with a seed of its own (the number of times it was
    sent): a response cache, keyed by the request, and a greedy model would otherwise give the refused answer
    again. The seed keeps it reproducible, so a rerun is served from the cache all the same. An answer that is
    word for word a refused answer of this call (a small model copies the refused answer a retry shows it, at any
    temperature: the 1.5B model gave one 17-word task three times, at 0.7 and at 0.8 with a seed) is not shown
    again: the next retries send the first prompt with the error under it (`COPIED_TEMPLATE`), sampled warm
    with a seed that grows with each copy.
    """
    # Long generations (a class, a rich state) can take minutes on slow or local models. Real answers of
    # every step stay well under 2,048 tokens (a class skeleton of the 1.5B local model: ~450); longer
    # output is a model repeating itself, which costs a small local model ~10 minutes per 2,000 tokens.
    settings = settings or GenerationSettings(temperature=0.0, max_tokens=2048, timeout_s=600.0)
    if schema is not None:
        settings = settings.model_copy(update={"json_schema": schema})
    window = context_window(provider)
    answer_room = min(settings.max_tokens or 2048, window // 2) if window else 0

    def fit(extra: int = 0) -> tuple[list[Message], GenerationSettings]:
        budget = None if window is None else window - answer_room - extra
        fitted = fit_prompt(partial(render_prompt, template or step), context, ladder, budget)
        if window is None:
            return fitted.messages, settings
        if budget is not None and fitted.tokens > budget:
            raise StepFailed(step, f"the prompt needs about {fitted.tokens + extra} tokens at its shortest; "
                             f"{provider.spec}'s context is {window} tokens, {answer_room} of them kept for the "
                             "answer", 0, kind="context_overflow")
        room = window - fitted.tokens - extra
        return fitted.messages, settings.model_copy(update={"max_tokens": min(settings.max_tokens or room, room)})

    def fit_retry(follow: list[Message]) -> tuple[list[Message], GenerationSettings, list[Message]]:
        """The prompt and the refused answer with its error, within the context: the prompt re-fitted with that
        room taken, and where even its leanest form leaves too little room, the answer cut in the middle (to
        what fits beside the richest rung that leaves it `MIN_SHOWN` tokens; the cut says so)."""
        try:
            return (*fit(estimate_tokens(follow)), follow)
        except StepFailed:
            if window is None:  # fit refuses only against a known window
                raise
            error_only = estimate_tokens([follow[0].model_copy(update={"content": ""}), follow[1]])
            budget = window - answer_room - error_only
            fitted = fit_prompt(partial(render_prompt, template or step), context, ladder, budget - MIN_SHOWN)
            if fitted.tokens > budget - MIN_SHOWN:  # not even a glimpse of the answer fits: no call, as before
                raise
        shown = cut_to_fit(follow[0].content, budget - fitted.tokens)
        cut = [follow[0].model_copy(update={"content": shown}), follow[1]]
        return (*fit(estimate_tokens(cut)), cut)

    def fit_copied(error: str, times: int) -> tuple[list[Message], GenerationSettings]:
        """The first prompt with the error added to its last message, the refused answer left out."""
        note = "\n\n" + COPIED_TEMPLATE.format(error=error, times=times)
        messages, fitted = fit(estimate_tokens([Message(role="user", content=note)]))
        return [*messages[:-1], messages[-1].model_copy(update={"content": messages[-1].content + note})], fitted

    first, call_settings = fit()
    messages = first
    last_error = ""
    refused: list[str] = []  # this call's refused answers, to tell a copy
    copies = 0
    current_step.set(step)  # for the progress lines (this task's context only)
    for attempt in range(retries + 1):
        sent_settings = call_settings
        if vary_repeats:
            digest = _digest(messages, call_settings)
            if bump := meter.sent[digest] + copies:
                sent_settings = call_settings.model_copy(update={
                    "temperature": max(REPEAT_TEMPERATURE, call_settings.temperature or 0.0), "seed": bump})
            meter.sent[digest] += 1
        try:
            turn = await provider.complete(messages, None, sent_settings)
        except ModelFault as exc:
            raise StepFailed(step, str(exc), attempt + 1, kind=exc.kind) from exc
        meter.add(turn.usage, seat)
        answer = turn.message.content or ""
        try:
            return accept(answer)
        except (AnswerFormatError, ValueError) as exc:
            last_error = str(exc) or type(exc).__name__
        if turn.finish_reason == "length":
            last_error += (f" (the answer was cut off after {turn.usage.output_tokens} tokens, at the length limit, "
                           "before it was complete: make it shorter)")
        same = " ".join(answer.split())
        if vary_repeats and same in refused:
            copies += 1
        refused.append(same)
        if attempt < retries and copies:
            messages, call_settings = fit_copied(last_error, refused.count(same))
        elif attempt < retries:
            follow = [Message(role="assistant", content=answer),
                      Message(role="user", content=RETRY_TEMPLATE.format(error=last_error))]
            if window is not None:  # the answer and the error travel with the prompt: shorten it to make room
                first, call_settings, follow = fit_retry(follow)
            messages = [*first, *follow]
    raise StepFailed(step, last_error, retries + 1)


def _digest(messages: Sequence[Message], settings: GenerationSettings) -> str:
    """A request's identity for `ask(vary_repeats=True)`: its messages and settings."""
    body = {"messages": [m.model_dump(mode="json") for m in messages],
            "settings": settings.model_dump(mode="json", exclude={"timeout_s"})}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
