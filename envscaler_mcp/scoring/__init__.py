"""Scoring: the one score and success rule of an episode and the run metrics (pass@k, pass^k) in metrics.py."""
