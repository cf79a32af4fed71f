"""Scenarios of library_loans: hand-authored library circulation desk tasks, each with a plausible wrong solution (WRONG).

`python environments/library_loans/make_scenarios.py [--check]` gates them through the environment's generated server
and writes scenarios/library_loans.jsonl only when all pass (envscaler_mcp.authoring.main; exit code 1 otherwise).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envscaler_mcp import authoring

HERE = Path(__file__).resolve().parent
ENV_ID = "library_loans"
STATE: dict[str, Any] = authoring.default_state(HERE)
TODAY = STATE["today"]
DUE_21 = "2026-06-02"  # today + 21 days
DUE_14 = "2026-05-26"  # today + 14 days


def isbn(title: str) -> str:
    """ISBN of a title in the default state."""
    return next(b["isbn"] for b in STATE["books"].values() if b["title"] == title)


# Helper lists a validator expression may use. `initial_state` is a global the runner provides.
NEW = {
    "new_loans": '[x for k, x in final_state["loans"].items() if k not in initial_state["loans"]]',
    "new_holds": '[x for k, x in final_state["holds"].items() if k not in initial_state["holds"]]',
    "new_fines": '[x for k, x in final_state["fines"].items() if k not in initial_state["fines"]]',
    "new_members": '[x for k, x in final_state["members"].items() if k not in initial_state["members"]]',
}


def field(kind: str, key: str, name: str) -> str:
    """Expression: one field of a record in the final state."""
    return f'final_state["{kind}"]["{key}"]["{name}"]'


def unchanged(kind: str, key: str) -> str:
    """Expression: a record is exactly as it was initially."""
    return f'final_state["{kind}"]["{key}"] == initial_state["{kind}"]["{key}"]'


SPECS: list[dict[str, Any]] = [
    {
        "title": "Return a late book that someone is waiting for",
        "task": "Desmond Oyelaran just dropped off copy C-30095 (Sleep Better Tonight) at the desk. Please "
                "check it in.",
        "checklist": [
            ("Has loan L-8063 been returned today?",
             field("loans", "L-8063", "status") + ' == "returned" and '
             + field("loans", "L-8063", "returned_date") + f' == "{TODAY}"'),
            ("Has Desmond (M-2006) been charged an unpaid overdue fine of 2.25 for loan L-8063?",
             'any(f["member_id"] == "M-2006" and f["loan_id"] == "L-8063" and f["reason"] == "overdue" '
             'and f["amount"] == 2.25 and f["status"] == "unpaid" for f in new_fines)'),
            ("Has the copy gone to the hold shelf for the oldest waiting hold, H-630?",
             field("copies", "C-30095", "status") + ' == "on_hold_shelf" and '
             + field("copies", "C-30095", "hold_id") + ' == "H-630" and '
             + field("holds", "H-630", "status") + ' == "ready"'),
            ("Are the later holds H-628 and H-629 still waiting?",
             field("holds", "H-628", "status") + ' == "waiting" and ' + field("holds", "H-629", "status")
             + ' == "waiting"', False),
        ],
        "solution": [("return_copy", {"copy_id": "C-30095"})],
    },
    {
        "title": "Renew one loan",
        "task": "Colette Girard asked us to renew her loan L-8204 (The Ninth Footprint).",
        "checklist": [
            (f"Is loan L-8204 now due on {DUE_21}?", field("loans", "L-8204", "due_date") + f' == "{DUE_21}"'),
            ("Has loan L-8204 been counted as renewed once?", field("loans", "L-8204", "renewals") + " == 1"),
            ("Have Colette's other loans (L-8205, L-8207, L-8225) been left as they were?",
             " and ".join(unchanged("loans", k) for k in ("L-8205", "L-8207", "L-8225")), False),
        ],
        "solution": [("renew_loan", {"loan_id": "L-8204"})],
    },
    {
        "title": "Pick up a hold after returning a late book",
        "task": "I'm Leonard Fairbanks. I'm here to pick up the copy of The Lanternkeeper's Daughter you're "
                "holding for me. I'm also bringing back Northbound Letters, which I know is late - I'll pay the "
                "late fee right now.",
        "checklist": [
            ("Has Leonard's Northbound Letters loan L-8149 been returned?",
             field("loans", "L-8149", "status") + ' == "returned"'),
            ("Has the overdue fine for L-8149 (3.25) been paid?",
             'any(f["loan_id"] == "L-8149" and f["amount"] == 3.25 and f["status"] == "paid" for f in new_fines)'),
            (f"Has Leonard (M-2016) checked out copy C-30002, due {DUE_21}?",
             'any(ln["member_id"] == "M-2016" and ln["copy_id"] == "C-30002" and ln["status"] == "active" '
             f'and ln["due_date"] == "{DUE_21}" for ln in new_loans)'),
            ("Has hold H-601 been fulfilled?", field("holds", "H-601", "status") + ' == "fulfilled"'),
        ],
        "solution": [
            ("find_members", {"name": "Leonard Fairbanks"}),
            ("list_holds", {"member_id": "M-2016", "status": "ready"}),
            ("list_loans", {"member_id": "M-2016", "status": "active"}),
            ("return_copy", {"copy_id": "C-30009"}),
            ("pay_fine", {"fine_id": "F-931"}),
            ("checkout", {"member_id": "M-2016", "copy_id": "C-30002"}),
        ],
    },
    {
        "title": "Expired membership, late book, new loan",
        "task": "Desmond Oyelaran would like to borrow Bridges of Steel: Lives of Engineers. He is returning "
                "Sleep Better Tonight (copy C-30095) today, and he's happy to renew his membership if that's "
                "needed.",
        "checklist": [
            ("Has loan L-8063 been returned?", field("loans", "L-8063", "status") + ' == "returned"'),
            ("Has Desmond's membership been renewed until 2027-05-12?",
             field("members", "M-2006", "expiry_date") + ' == "2027-05-12"'),
            (f"Has Desmond (M-2006) borrowed a copy of Bridges of Steel, due {DUE_21}?",
             f'any(ln["member_id"] == "M-2006" and ln["isbn"] == "{isbn("Bridges of Steel: Lives of Engineers")}" '
             f'and ln["due_date"] == "{DUE_21}" and ln["status"] == "active" for ln in new_loans)'),
            ("Has his other loan L-8147 been left as it was?", unchanged("loans", "L-8147"), False),
        ],
        "solution": [
            ("find_members", {"name": "Desmond Oyelaran"}),
            ("check_borrowing_status", {"member_id": "M-2006"}),
            ("return_copy", {"copy_id": "C-30095"}),
            ("renew_membership", {"member_id": "M-2006"}),
            ("search_catalog", {"query": "Bridges of Steel", "available_only": True}),
            ("checkout", {"member_id": "M-2006", "copy_id": "C-30048"}),
        ],
    },
    {
        "title": "Daily hold shelf cleanup and a cancellation",
        "task": "Please run today's hold shelf cleanup so that uncollected holds past their pickup date are "
                "expired. Also, Sami Virtanen phoned to cancel his hold on Chess Strategy for Everyone.",
        "checklist": [
            ("Have the uncollected holds H-601, H-608 and H-618 been expired?",
             " and ".join(field("holds", h, "status") + ' == "expired"' for h in ("H-601", "H-608", "H-618"))),
            ("Has copy C-30002 passed to the next hold in the queue, H-602?",
             field("holds", "H-602", "status") + ' == "ready" and ' + field("holds", "H-602", "copy_id")
             + ' == "C-30002"'),
            ("Are copies C-30015 and C-30044 back on the shelf as available?",
             field("copies", "C-30015", "status") + ' == "available" and '
             + field("copies", "C-30044", "status") + ' == "available"'),
            ("Has Sami's hold H-636 been cancelled?", field("holds", "H-636", "status") + ' == "cancelled"'),
            ("Has hold H-634, whose pickup date has not passed, stayed ready?",
             field("holds", "H-634", "status") + ' == "ready"', False),
        ],
        "solution": [
            ("expire_uncollected_holds", {}),
            ("find_members", {"name": "Sami Virtanen"}),
            ("list_holds", {"member_id": "M-2020", "status": "waiting"}),
            ("cancel_hold", {"hold_id": "H-636"}),
        ],
    },
    {
        "title": "Borrow one, reserve one, and a reference book",
        "task": "I'm Ravi Subramanian. I'd like to take out The Ember Colony and the World Atlas, 12th Edition, "
                "and please put me in the queue for Orbit of Small Things - I'll collect it at Central.",
        "checklist": [
            (f"Has Ravi (M-2010) borrowed a copy of The Ember Colony, due {DUE_21}?",
             f'any(ln["member_id"] == "M-2010" and ln["isbn"] == "{isbn("The Ember Colony")}" '
             f'and ln["due_date"] == "{DUE_21}" and ln["status"] == "active" for ln in new_loans)'),
            ("Has Ravi got a waiting hold on Orbit of Small Things for pickup at Central?",
             f'any(h["member_id"] == "M-2010" and h["isbn"] == "{isbn("Orbit of Small Things")}" '
             'and h["status"] == "waiting" and h["pickup_branch"] == "Central" for h in new_holds)'),
            ("Has nothing been lent or reserved on the reference-only World Atlas?",
             f'not any(x["isbn"] == "{isbn("World Atlas, 12th Edition")}" for x in new_loans + new_holds)', False),
        ],
        "solution": [
            ("find_members", {"name": "Ravi Subramanian"}),
            ("search_catalog", {"query": "The Ember Colony"}),
            ("get_book", {"isbn": isbn("The Ember Colony")}),
            ("checkout", {"member_id": "M-2010", "copy_id": "C-30025"}),
            ("search_catalog", {"query": "World Atlas"}),
            ("search_catalog", {"query": "Orbit of Small Things"}),
            ("place_hold", {"member_id": "M-2010", "isbn": isbn("Orbit of Small Things"),
                            "pickup_branch": "Central"}),
        ],
    },
    {
        "title": "Lost and found",
        "task": "Penelope Hart found the copy of Songs for a Sleeping Dragon she reported lost and has brought "
                "it back. Unfortunately she has now lost The Glass Orchard she borrowed last week - please "
                "record that. She'd also like to borrow The Silent Alibi today if the rules allow it; she can't "
                "pay anything today.",
        "checklist": [
            ("Is copy C-30038 back in circulation?", field("copies", "C-30038", "status") + ' == "available"'),
            ("Has the lost-item charge F-929 been waived?", field("fines", "F-929", "status") + ' == "waived"'),
            ("Have loan L-8213 and copy C-30008 been recorded as lost?",
             field("loans", "L-8213", "status") + ' == "lost" and ' + field("copies", "C-30008", "status")
             + ' == "lost"'),
            ("Has Penelope (M-2019) been charged 33.0 for the lost Glass Orchard?",
             'any(f["member_id"] == "M-2019" and f["loan_id"] == "L-8213" and f["reason"] == "lost" '
             'and f["amount"] == 33.0 for f in new_fines)'),
            ("Has no new loan been made to Penelope, whose fines now block borrowing?",
             'not any(ln["member_id"] == "M-2019" for ln in new_loans)', False),
        ],
        "solution": [
            ("find_members", {"name": "Penelope Hart"}),
            ("list_loans", {"member_id": "M-2019"}),
            ("mark_copy_found", {"copy_id": "C-30038"}),
            ("report_lost", {"loan_id": "L-8213"}),
            ("check_borrowing_status", {"member_id": "M-2019"}),
        ],
    },
    {
        "title": "Renew what can be renewed and pick up a hold",
        "task": "Hiroshi Mori would like to renew all of his loans that can be renewed, and pick up his "
                "reserved copy of Starfall Protocol while he's here.",
        "checklist": [
            (f"Are loans L-8139, L-8192 and L-8224 now due on {DUE_21}?",
             " and ".join(field("loans", k, "due_date") + f' == "{DUE_21}"' for k in ("L-8139", "L-8192", "L-8224"))),
            ("Have loans L-8182 and L-8191, whose titles other members are waiting for, been left unchanged?",
             unchanged("loans", "L-8182") + " and " + unchanged("loans", "L-8191"), False),
            ("Has Hiroshi (M-2028) checked out the held copy C-30024?",
             'any(ln["member_id"] == "M-2028" and ln["copy_id"] == "C-30024" and ln["status"] == "active" '
             "for ln in new_loans)"),
            ("Has hold H-609 been fulfilled?", field("holds", "H-609", "status") + ' == "fulfilled"'),
        ],
        "solution": [
            ("find_members", {"name": "Hiroshi Mori"}),
            ("renew_all_loans", {"member_id": "M-2028"}),
            ("list_holds", {"member_id": "M-2028", "status": "ready"}),
            ("checkout", {"member_id": "M-2028", "copy_id": "C-30024"}),
        ],
    },
    {
        "title": "New child card and first loans",
        "task": "Please sign up my son Oscar Blake for a child's card at Hillcrest (email oscar.blake@post.example, "
                "phone +1-555-318-2290) and check out Captain Juniper's Treasure and The Owl Who Counted Stars "
                "for him.",
        "checklist": [
            ("Has Oscar Blake been registered as a child member at Hillcrest?",
             'any(m["name"] == "Oscar Blake" and m["membership_type"] == "child" and m["home_branch"] == "Hillcrest" '
             "for m in new_members)"),
            (f"Has Oscar borrowed Captain Juniper's Treasure, due {DUE_14}?",
             f'any(ln["isbn"] == "{isbn("Captain Juniper" + chr(39) + "s Treasure")}" and ln["due_date"] == "{DUE_14}" '
             'and ln["status"] == "active" '
             'and any(m["member_id"] == ln["member_id"] and m["name"] == "Oscar Blake" for m in new_members) '
             "for ln in new_loans)"),
            (f"Has Oscar borrowed The Owl Who Counted Stars, due {DUE_14}?",
             f'any(ln["isbn"] == "{isbn("The Owl Who Counted Stars")}" and ln["due_date"] == "{DUE_14}" '
             'and ln["status"] == "active" '
             'and any(m["member_id"] == ln["member_id"] and m["name"] == "Oscar Blake" for m in new_members) '
             "for ln in new_loans)"),
        ],
        "solution": [
            ("register_member", {"name": "Oscar Blake", "email": "oscar.blake@post.example",
                                 "phone": "+1-555-318-2290", "membership_type": "child", "home_branch": "Hillcrest"}),
            ("search_catalog", {"query": "Captain Juniper", "available_only": True}),
            ("search_catalog", {"query": "The Owl Who Counted Stars", "available_only": True}),
            ("get_book", {"isbn": isbn("Captain Juniper's Treasure")}),
            ("checkout", {"member_id": "M-2029", "copy_id": "C-30066"}),
            ("get_book", {"isbn": isbn("The Owl Who Counted Stars")}),
            ("checkout", {"member_id": "M-2029", "copy_id": "C-30063"}),
        ],
    },
    {
        "title": "Settle fines, waive one, renew",
        "task": "Fiona Gallagher wants to clear her account. The 5.25 late fee was caused by our broken book drop, "
                "so please waive that one; she'll pay the rest now. Then renew whatever of her loans can be "
                "renewed.",
        "checklist": [
            ("Has the 5.25 fine F-915 been waived?", field("fines", "F-915", "status") + ' == "waived"'),
            ("Have fines F-908 and F-910 been paid?",
             field("fines", "F-908", "status") + ' == "paid" and ' + field("fines", "F-910", "status") + ' == "paid"'),
            (f"Is loan L-8214 now due on {DUE_21}?", field("loans", "L-8214", "due_date") + f' == "{DUE_21}"'),
            ("Has loan L-8148, whose title has a waiting hold, been left unchanged?",
             unchanged("loans", "L-8148"), False),
        ],
        "solution": [
            ("find_members", {"name": "Fiona Gallagher"}),
            ("list_fines", {"member_id": "M-2005", "status": "unpaid"}),
            ("waive_fine", {"fine_id": "F-915", "reason": "book drop was broken"}),
            ("pay_fine", {"fine_id": "F-908"}),
            ("pay_fine", {"fine_id": "F-910"}),
            ("renew_all_loans", {"member_id": "M-2005"}),
        ],
    },
    {
        "title": "Membership renewal and holds",
        "task": "Greta Lindholm's membership runs out this week - please renew it. She'd also like to reserve "
                "The Clockmaker's Wager and How Forests Talk, both for pickup at Riverside.",
        "checklist": [
            ("Has Greta's membership been extended to 2027-05-17?",
             field("members", "M-2023", "expiry_date") + ' == "2027-05-17"'),
            ("Has Greta (M-2023) got a waiting hold on How Forests Talk for Riverside?",
             f'any(h["member_id"] == "M-2023" and h["isbn"] == "{isbn("How Forests Talk")}" '
             'and h["pickup_branch"] == "Riverside" and h["status"] == "waiting" for h in new_holds)'),
            ("Has no hold been placed for Greta on The Clockmaker's Wager, which she already has on loan?",
             f'not any(h["member_id"] == "M-2023" and h["isbn"] == "{isbn("The Clockmaker" + chr(39) + "s Wager")}" '
             "for h in new_holds)", False),
        ],
        "solution": [
            ("find_members", {"name": "Greta Lindholm"}),
            ("renew_membership", {"member_id": "M-2023"}),
            ("list_loans", {"member_id": "M-2023", "status": "active"}),
            ("search_catalog", {"query": "How Forests Talk"}),
            ("place_hold", {"member_id": "M-2023", "isbn": isbn("How Forests Talk"), "pickup_branch": "Riverside"}),
        ],
    },
]


# A plausible wrong solution per scenario title: replayed (failed calls ignored), it must leave at least
# one validator False, so the checklist is strict enough to tell it from the reference solution.
WRONG: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "Return a late book that someone is waiting for": [("return_copy", {"copy_id": "C-30094"})],
    "Renew one loan": [("renew_all_loans", {"member_id": "M-2011"})],
    "Pick up a hold after returning a late book": [
        ("return_copy", {"copy_id": "C-30009"}),
        ("checkout", {"member_id": "M-2016", "copy_id": "C-30002"}),
    ],
    "Expired membership, late book, new loan": [
        ("return_copy", {"copy_id": "C-30095"}),
        ("renew_membership", {"member_id": "M-2006"}),
        ("checkout", {"member_id": "M-2006", "copy_id": "C-30021"}),
    ],
    "Daily hold shelf cleanup and a cancellation": [("cancel_hold", {"hold_id": "H-636"})],
    "Borrow one, reserve one, and a reference book": [
        ("checkout", {"member_id": "M-2010", "copy_id": "C-30025"}),
        ("place_hold", {"member_id": "M-2010", "isbn": isbn("Orbit of Small Things"), "pickup_branch": "Riverside"}),
    ],
    "Lost and found": [("report_lost", {"loan_id": "L-8213"})],
    "Renew what can be renewed and pick up a hold": [
        ("renew_loan", {"loan_id": "L-8139"}),
        ("checkout", {"member_id": "M-2028", "copy_id": "C-30024"}),
    ],
    "New child card and first loans": [
        ("register_member", {"name": "Oscar Blake", "email": "oscar.blake@post.example", "phone": "+1-555-318-2290",
                             "membership_type": "adult", "home_branch": "Hillcrest"}),
        ("checkout", {"member_id": "M-2029", "copy_id": "C-30066"}),
        ("checkout", {"member_id": "M-2029", "copy_id": "C-30063"}),
    ],
    "Settle fines, waive one, renew": [
        ("pay_fine", {"fine_id": "F-908"}),
        ("pay_fine", {"fine_id": "F-910"}),
        ("pay_fine", {"fine_id": "F-915"}),
        ("renew_all_loans", {"member_id": "M-2005"}),
    ],
    "Membership renewal and holds": [
        ("renew_membership", {"member_id": "M-2023"}),
        ("place_hold", {"member_id": "M-2023", "isbn": isbn("How Forests Talk"), "pickup_branch": "Central"}),
    ],
}


# Questions answered by looking things up; checked on what the agent did and said (authoring.read_only).
READ_ONLY: list[dict[str, Any]] = [
    {
        "title": "Why can't I borrow?",
        "task": "Hello, this is Penelope Hart (penelope.hart@post.example). The self-checkout refused me today. "
                "Why can't I borrow books at the moment, and what exactly do I owe?",
        "solution": [("find_members", {"email": "penelope.hart@post.example"}),
                     ("check_borrowing_status", {"member_id": "M-2019"}),
                     ("list_fines", {"member_id": "M-2019", "status": "unpaid"})],
        "answer": "You can't borrow because you owe 36.75 in unpaid fines, and borrowing is blocked once unpaid "
                  "fines reach 10.00. They are 34.00 for the lost copy of Songs for a Sleeping Dragon and 2.75 "
                  "for a loan returned 11 days late.",
        "checks": [
            ("Has the agent said Penelope owes 36.75 in unpaid fines?", "says(transcript, 36.75)"),
            ("Has the agent said borrowing is blocked from 10.00 of unpaid fines?", "says(transcript, 10)"),
            ("Has the agent named the 34.00 fine for the lost Songs for a Sleeping Dragon?",
             "says(transcript, 34, 'Songs for a Sleeping Dragon')"),
            ("Has the agent named the 2.75 fine for a loan 11 days late?", "says(transcript, 2.75, 11)"),
            ("Has the agent looked up Penelope's fines or borrowing status?",
             "called(transcript, 'list_fines', member_id='M-2019') "
             "or called(transcript, 'check_borrowing_status', member_id='M-2019')"),
        ],
    },
    {
        "title": "When can I get The Clockmaker's Wager?",
        "task": "Is The Clockmaker's Wager by Ines Carvalho available at any branch right now? If not, when is "
                "the next copy due back, and how many people are already waiting for it?",
        "solution": [("search_catalog", {"query": "Clockmaker"}),
                     ("get_book", {"isbn": "978-1-04185-995-5"})],
        "answer": "No: all three copies of The Clockmaker's Wager are on loan. The next one is due back on "
                  "2026-05-22, and 2 people are already waiting for it.",
        "checks": [
            ("Has the agent said all three copies are on loan?",
             "says(transcript, 3) and (says(transcript, 'on loan') or says(transcript, 'checked out') "
             "or says(transcript, 'not available') or says(transcript, 'unavailable'))"),
            ("Has the agent said the next copy is due back on 2026-05-22?", "says(transcript, '2026-05-22')"),
            ("Has the agent said 2 people are waiting?",
             "says(transcript, 2) and (says(transcript, 'waiting') or says(transcript, 'hold') "
             "or says(transcript, 'holds'))"),
            ("Has the agent looked the title up?", "called(transcript, 'get_book', isbn='978-1-04185-995-5')"),
        ],
    },
]


if __name__ == "__main__":
    sys.exit(authoring.main(HERE, authoring.from_specs(ENV_ID, SPECS, STATE, NEW) + authoring.read_only(ENV_ID, READ_ONLY, STATE), WRONG))
