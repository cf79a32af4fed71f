"""A task shorter than the task step's minimum is kept when it is grounded and asks for more than one change.

The task step asks for at least `parsers.MIN_TASK_WORDS` (20) words (EnvScaler asks for about 50: several sub-goals, each
needing several calls), so that a task is compositional. The 1.5B model's `it_helpdesk` task "Assign ticket
'INC-3001' to 'AG03' and resolve it with the comment 'Fixed battery issue.'" has 14 words, names its records
and asks for two changes: compositional, and refused for its length alone. The bundled hand-written scenarios
are as short at times: 10 of their 82 tasks have fewer than 20 words (6-17). So a task of at least
`MIN_SHORT_TASK_WORDS` words is kept when it names a record of its initial state (`qa.grounding`) and at least
two of the environment's kinds of change (the verbs its state-changing tools are named after: `assign_ticket`,
`resolve_ticket`), each as a word of the task in its base form or its -ing form ("resolve", "resolving"; not
"placed it by mistake" or "a checked bag", which tell what happened), and not after a negation in its sentence
("do not close it"). Of the 10 short bundled tasks none asks
for two kinds of change: none would be kept by this rule; the 14-word task above is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envscaler_mcp._json import State
from envscaler_mcp.qa.grounding import names_a_record

MIN_SHORT_TASK_WORDS = 10
_WORD = re.compile(r"[a-z]+")
_SENTENCE = re.compile(r"[.;!?]\s")
_NEGATIONS = frozenset({"not", "never", "nor", "without"})


def change_verbs(tools: Iterable[str]) -> set[str]:
    """The verbs the state-changing tools are named after (the first word of `assign_ticket`, `checkout`)."""
    return {verb for name in tools if len(verb := name.lower().split("_")[0]) >= 3}


def _forms(verb: str) -> set[str]:
    """A verb as a request uses it: assign, assigning; resolve, resolving; cancel, cancelling. Not its past forms,
    which tell what happened ("placed it by mistake", "one checked bag")."""
    return {verb, verb + "ing", verb + verb[-1] + "ing"} | ({verb[:-1] + "ing"} if verb.endswith("e") else set())


def changes_asked(task: str, verbs: Iterable[str]) -> set[str]:
    """The verbs of `verbs` that `task` uses, in some form, and does not decline: a verb after a negation in its
    sentence ("do not close it", "don't assign … or resolve it") asks for no change."""
    asked: set[str] = set()
    for sentence in _SENTENCE.split(task.lower()):
        words = _WORD.findall(sentence.replace("n't", " not"))
        if _NEGATIONS & set(words):
            words = words[:min(words.index(n) for n in _NEGATIONS if n in words)]
        asked |= {verb for verb in verbs if set(words) & _forms(verb)}
    return asked


def short_task_ok(state: State, verbs: Iterable[str], task: str) -> bool:
    """Whether a task under `parsers.MIN_TASK_WORDS` words is kept: at least MIN_SHORT_TASK_WORDS words, a record
    of `state` named, and two or more kinds of change asked for."""
    return (len(task.split()) >= MIN_SHORT_TASK_WORDS and len(changes_asked(task, verbs)) >= 2
            and names_a_record(state, task))
