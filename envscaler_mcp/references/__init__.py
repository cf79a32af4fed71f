"""The reference final state: replaying a scenario's reference solution, the cached and stored result, and
the check of an agent's final state against it. Used by both the QA gate and the harness."""
