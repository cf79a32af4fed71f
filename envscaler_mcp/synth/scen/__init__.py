"""ScenGenerator: initial states, tasks, checklists, validators and reference solutions, kept only when the
scenario QA gate and the mutation test hold (`envscaler-mcp synth scenarios`)."""
