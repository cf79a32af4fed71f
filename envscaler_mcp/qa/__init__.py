"""QA stage: the scenario gate (validators, initial-false, replay, final-true) and the mutation test."""
