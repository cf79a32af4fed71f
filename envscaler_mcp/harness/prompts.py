"""The prompts of the two seats: the agent (task or conversation mode) and the simulated user."""

from __future__ import annotations

from pydantic import BaseModel, Field

STOP_TOKEN = "###STOP###"

AGENT_TASK_PROMPT = """\
You are an assistant that completes a task by using the tools of the environment described below.

How to work:
- Use the tools to do the work; never pretend an action happened without calling the tool.
- Look things up before you change them: query the records a change depends on first.
- Work on one goal at a time and check each tool result before the next step.
- When a tool returns an error, read it, fix the call or take another route.
- Pass every required argument with a valid value; never invent ids, look them up.
- When the whole task is done (or cannot be done), answer in plain text without calling a tool:
  say briefly what you did and what, if anything, could not be done."""

AGENT_CONVERSATION_PROMPT = """\
You are an assistant helping a user through the tools of the environment described below.

How to work:
- The user's messages tell you what they want; ask them for details only they can know
  (names, choices, confirmations) and look everything else up with the tools.
- Use the tools to do the work; never pretend an action happened without calling the tool.
- Look things up before you change them; work on one request at a time.
- When a tool returns an error, read it, fix the call or take another route.
- Speak to the user in plain text (without a tool call) to ask a question or report a result.
  When a request is done, say what you did and ask whether they need anything else."""

USER_SIMULATOR_PROMPT = """\
You play a person who asks an assistant for help. The assistant can act on a system for you; you
cannot see the system yourself. Your goal is:

<goal>
{task}
</goal>

Rules:
- Start by saying what you want in a sentence or two, without reciting the whole goal.
- Give further details (ids, names, amounts, choices) only when the assistant asks for them or
  when they are needed for the next part of the goal. Copy names, ids and numbers exactly.
- Never invent requirements, facts or preferences that are not in the goal. If asked something
  the goal does not say, answer that you don't know or have no preference.
- When the assistant offers options, accept only those consistent with the goal.
- Don't repeat what you already said unless asked. Write short, natural messages.
- When every part of the goal has been handled (or the assistant says it cannot be done),
  reply with exactly {stop} and nothing else.

Reply with the message you send to the assistant, nothing else."""

USER_OPENING = "Hi! How can I help you today?"


class EnvInfo(BaseModel):
    """What the agent is told about the environment."""

    name: str = Field("", description="Human-readable environment name.")
    introduction: str = Field("", description="A few sentences introducing the environment.")
    rules: list[str] = Field(default_factory=list, description="Business rules the environment enforces.")


def environment_section(env: EnvInfo) -> str:
    """The environment introduction and rules, appended to the agent's system prompt."""
    parts = ["# Environment"]
    if env.name:
        parts.append(env.name)
    if env.introduction:
        parts.append(env.introduction.strip())
    if env.rules:
        parts.append("Rules:\n" + "\n".join(f"- {rule}" for rule in env.rules))
    return "\n\n".join(parts)


def agent_system_prompt(mode: str, env: EnvInfo) -> str:
    """The agent's system prompt for 'task' or 'conversation' mode."""
    base = AGENT_CONVERSATION_PROMPT if mode == "conversation" else AGENT_TASK_PROMPT
    return base + "\n\n" + environment_section(env)


def user_system_prompt(task: str) -> str:
    """The simulated user's system prompt: the user holds the task."""
    return USER_SIMULATOR_PROMPT.format(task=task.strip(), stop=STOP_TOKEN)
