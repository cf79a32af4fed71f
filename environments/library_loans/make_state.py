"""Write default_state.json for library_loans: a fictional three-branch library, deterministic (seeded).

Run from the repository root: python environments/library_loans/make_state.py
Each copy's history is simulated in time order, so loans never overlap, copy statuses match the loans
and holds, waiting holds exist only for titles with no copy on the shelf, and fines follow the rules.
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
TODAY = date(2026, 5, 12)
BRANCHES = ["Central", "Riverside", "Hillcrest"]
LIMITS = {"adult": 10, "student": 8, "senior": 10, "child": 5}

MEMBERS = [
    ("Annika Brandt", "adult"), ("Joel Whitaker", "adult"), ("Priscilla Nunez", "senior"), ("Marco Bellini", "adult"),
    ("Fiona Gallagher", "student"), ("Desmond Oyelaran", "adult"), ("Harriet Cole", "senior"), ("Yusuf Demir", "student"),
    ("Isla Mackenzie", "child"), ("Ravi Subramanian", "adult"), ("Colette Girard", "adult"), ("Bruno Albrecht", "senior"),
    ("Tamsin Reyes", "student"), ("Quentin Osei", "adult"), ("Mira Kovacs", "child"), ("Leonard Fairbanks", "senior"),
    ("Ingrid Solberg", "adult"), ("Kofi Boateng", "student"), ("Penelope Hart", "adult"), ("Sami Virtanen", "adult"),
    ("Lucy Fenwick", "child"), ("Abdul Karim", "adult"), ("Greta Lindholm", "adult"), ("Tobias Wren", "student"),
    ("Maribel Ortiz", "adult"), ("Eamon Doyle", "senior"), ("Juniper Blake", "child"), ("Hiroshi Mori", "adult"),
]
# title, author, genre, year, loan period (0 = reference), replacement cost
BOOKS = [
    ("The Lanternkeeper's Daughter", "Rosalind Achterberg", "fiction", 2019, 21, 24.0),
    ("Salt and Cinder", "Marcus Oyelowo", "fiction", 2022, 21, 22.5),
    ("A Map of Quiet Rivers", "Elena Vasquez-Moor", "fiction", 2017, 21, 19.0),
    ("The Glass Orchard", "Thea Lindqvist", "fiction", 2026, 7, 28.0),
    ("Northbound Letters", "Samuel Adeyemi", "fiction", 2020, 21, 18.5),
    ("The Clockmaker's Wager", "Ines Carvalho", "mystery", 2018, 21, 21.0),
    ("Death at Fennick Hall", "Beatrix Holloway", "mystery", 2021, 21, 20.0),
    ("The Ninth Footprint", "Oskar Lindgren", "mystery", 2023, 21, 23.0),
    ("Murder on the Night Ferry", "Cordelia Raines", "mystery", 2026, 7, 27.5),
    ("The Silent Alibi", "Hamid Farouk", "mystery", 2015, 21, 17.0),
    ("Starfall Protocol", "Kenji Abernathy", "science fiction", 2024, 21, 25.0),
    ("The Ember Colony", "Nadia Petrov", "science fiction", 2019, 21, 21.5),
    ("Orbit of Small Things", "Lucas Ferreira", "science fiction", 2021, 21, 22.0),
    ("Children of the Tidewell", "Amara Nwosu", "fantasy", 2020, 21, 24.5),
    ("The Iron Thistle Crown", "Gareth Lowell", "fantasy", 2016, 21, 20.5),
    ("Songs for a Sleeping Dragon", "Priya Raman", "fantasy", 2026, 7, 29.0),
    ("The Patient Garden", "Hollis Vance", "nonfiction", 2018, 21, 26.0),
    ("Bread, Salt and Fire", "Miriam Castell", "cooking", 2022, 21, 32.0),
    ("Weeknight Vegetables", "Tomás Herrera", "cooking", 2023, 21, 29.5),
    ("The Long Walk Home: A Memoir", "Ada Kwarteng", "biography", 2021, 21, 23.0),
    ("Bridges of Steel: Lives of Engineers", "Victor Halvorsen", "biography", 2017, 21, 27.0),
    ("A Brief Atlas of Weather", "Sunita Rao", "science", 2020, 21, 30.0),
    ("How Forests Talk", "Leif Andersen", "science", 2024, 21, 26.5),
    ("The Curious Brain", "Dr. Helena Marsh", "science", 2019, 21, 24.0),
    ("Money Without Mystery", "Carl Whitman", "nonfiction", 2022, 21, 19.5),
    ("The Quiet Hour: Essays", "Naomi Feld", "nonfiction", 2016, 21, 18.0),
    ("Pip and the Paper Boat", "Lottie Greenway", "children", 2018, 14, 12.0),
    ("The Owl Who Counted Stars", "Bashir Nadeem", "children", 2021, 14, 13.5),
    ("Captain Juniper's Treasure", "Molly Trevelyan", "children", 2023, 14, 14.0),
    ("Dinosaurs Under the Bed", "Freddie Okoro", "children", 2019, 14, 11.5),
    ("The Robot Who Learned to Paint", "Anika Sorensen", "children", 2025, 14, 15.0),
    ("Midnight at Maple Street School", "Grace Ellery", "young adult", 2022, 21, 16.5),
    ("The Summer We Found the Comet", "Jonah Pierce", "young adult", 2024, 21, 17.5),
    ("Shadows of the Lighthouse", "Rosalind Achterberg", "young adult", 2021, 21, 16.0),
    ("The Riverside Regional Encyclopedia", "Library Editorial Board", "reference", 2024, 0, 85.0),
    ("World Atlas, 12th Edition", "Cartographic Press", "reference", 2025, 0, 95.0),
    ("Dictionary of Everyday Law", "Miriam Okafor", "reference", 2023, 0, 60.0),
    ("Learning Spanish in 30 Days", "Lucia Moreno", "languages", 2020, 21, 22.0),
    ("Beginner's Japanese Workbook", "Aiko Tanabe", "languages", 2022, 21, 21.0),
    ("The Complete Guide to Houseplants", "Fern Whitley", "home", 2021, 21, 27.0),
    ("Fix It Yourself: Home Repairs", "Gus Delaney", "home", 2019, 21, 24.0),
    ("Running for Beginners", "Tessa Morland", "health", 2023, 21, 18.0),
    ("Sleep Better Tonight", "Dr. Omar Sadiq", "health", 2025, 21, 20.0),
    ("The Watercolor Year", "Beatrice Lamont", "art", 2020, 21, 31.0),
    ("Chess Strategy for Everyone", "Viktor Ilyin", "games", 2018, 21, 19.0),
]


class Builder:
    """Accumulates a consistent circulation history."""

    def __init__(self) -> None:
        self.rng = random.Random(20260512)
        self.members: dict = {}
        self.books: dict = {}
        self.copies: dict = {}
        self.loans: list = []
        self.holds: dict = {}
        self.fines: dict = {}

    def add_members(self) -> None:
        """Members of every type; two suspended, two expired, three expiring within the month."""
        rng = self.rng
        for n, (name, kind) in enumerate(MEMBERS):
            mid = f"M-{2001 + n}"
            joined = TODAY - timedelta(days=rng.randint(60, 2400))
            expiry = TODAY + timedelta(days=rng.randint(45, 330))
            if n in (5, 17):
                expiry = TODAY - timedelta(days=rng.randint(5, 40))
            if n in (2, 10, 22):
                expiry = TODAY + timedelta(days=rng.randint(3, 25))
            first, last = name.split()[0].lower(), name.split()[-1].lower()
            self.members[mid] = {
                "member_id": mid, "name": name, "email": f"{first}.{last}@post.example",
                "phone": f"+1-555-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}", "membership_type": kind,
                "home_branch": BRANCHES[n % 3], "joined_date": joined.isoformat(), "expiry_date": expiry.isoformat(),
                "status": "suspended" if n in (13, 25) else "active",
            }

    def add_books(self) -> None:
        """Titles with 1-3 copies spread over the branches (reference titles: one copy at Central)."""
        rng = self.rng
        copy_no = 30001
        for n, (title, author, genre, year, period, cost) in enumerate(BOOKS):
            isbn = f"978-1-{4000 + n * 37:05d}-{(n * 7919) % 900 + 100:03d}-{n % 10}"
            self.books[isbn] = {"isbn": isbn, "title": title, "author": author, "genre": genre, "year": year,
                                "loan_period_days": period, "replacement_cost": cost}
            count = 1 if period == 0 else rng.choice([2, 2, 3])
            for k in range(count):
                cid = f"C-{copy_no}"
                copy_no += 1
                self.copies[cid] = {"copy_id": cid, "isbn": isbn,
                                    "branch": "Central" if period == 0 else BRANCHES[(n + k) % 3],
                                    "status": "available", "hold_id": None}
        self.copies["C-30004"]["status"] = "withdrawn"

    def borrower(self, isbn: str, start: date, active: bool) -> str | None:
        """A member who could borrow this title on `start` (limits and duplicates checked for live loans)."""
        rng = self.rng
        children = self.books[isbn]["genre"] == "children"
        for mid in rng.sample(sorted(self.members), len(self.members)):
            m = self.members[mid]
            if (m["membership_type"] == "child") != children and rng.random() < 0.85:
                continue
            if active:
                if m["status"] != "active" or m["expiry_date"] < start.isoformat():
                    continue
                live = [ln for ln in self.loans if ln["member_id"] == mid and ln["status"] == "active"]
                if len(live) >= LIMITS[m["membership_type"]] - 1 or any(ln["isbn"] == isbn for ln in live):
                    continue
            return mid
        return None

    def simulate_copy(self, cid: str) -> None:
        """Lend one copy, loan after loan, from about 100 days ago until today."""
        rng = self.rng
        copy = self.copies[cid]
        period = self.books[copy["isbn"]]["loan_period_days"]
        if period == 0 or copy["status"] == "withdrawn":
            return
        t = TODAY - timedelta(days=100 - rng.randint(0, 20))
        while True:
            start = t + timedelta(days=rng.randint(1, 30))
            if start >= TODAY:
                return
            renewals = rng.choice([0, 0, 0, 1, 2])
            due = start + timedelta(days=period * (1 + renewals))
            late = rng.random() < 0.25
            back = due + timedelta(days=rng.randint(1, 30)) if late else due - timedelta(days=rng.randint(0, period - 1))
            active = back >= TODAY
            if active:  # renewals are made on or before each due date, so none can lie in the future
                renewals = min(renewals, (TODAY - start).days // period)
                due = start + timedelta(days=period * (1 + renewals))
            member = self.borrower(copy["isbn"], start, active)
            if member is None:
                t = start
                continue
            loan = {"copy_id": cid, "isbn": copy["isbn"], "member_id": member, "checkout_date": start.isoformat(),
                    "due_date": due.isoformat(), "returned_date": None if active else back.isoformat(),
                    "renewals": renewals, "status": "active" if active else "returned"}
            self.loans.append(loan)
            if active:
                copy["status"] = "on_loan"
                return
            t = back

    def number_loans(self) -> None:
        """Loan ids in checkout order; overdue fines for late returns (never for children)."""
        self.loans.sort(key=lambda ln: (ln["checkout_date"], ln["copy_id"]))
        for n, loan in enumerate(self.loans):
            loan["loan_id"] = f"L-{8001 + n}"
            if loan["returned_date"] and loan["returned_date"] > loan["due_date"]:
                days = (date.fromisoformat(loan["returned_date"]) - date.fromisoformat(loan["due_date"])).days
                if self.members[loan["member_id"]]["membership_type"] != "child":
                    recent = loan["returned_date"] >= (TODAY - timedelta(days=45)).isoformat()
                    status = "unpaid" if recent and n % 3 else ("waived" if n % 7 == 0 else "paid")
                    self.fine(loan, "overdue", min(days * 0.25, 10.0), status, loan["returned_date"],
                              f"{days} days late")

    def fine(self, loan: dict, reason: str, amount: float, status: str, issued: str, note: str) -> None:
        """Record a fine for a loan."""
        fid = f"F-{901 + len(self.fines)}"
        resolved = None if status == "unpaid" else min(date.fromisoformat(issued) + timedelta(days=9), TODAY).isoformat()
        self.fines[fid] = {"fine_id": fid, "member_id": loan["member_id"], "loan_id": loan["loan_id"],
                           "reason": reason, "amount": round(amount, 2), "issued_date": issued, "status": status,
                           "resolved_date": resolved, "note": note}

    def add_losses(self) -> None:
        """The two longest-overdue loans of adults were reported lost."""
        overdue = sorted((ln for ln in self.loans if ln["status"] == "active" and ln["due_date"] < TODAY.isoformat()
                          and self.members[ln["member_id"]]["membership_type"] != "child"),
                         key=lambda ln: ln["due_date"])
        for n, loan in enumerate(overdue[:2]):
            loan["status"] = "lost"
            self.copies[loan["copy_id"]]["status"] = "lost"
            book = self.books[loan["isbn"]]
            reported = (date.fromisoformat(loan["due_date"]) + timedelta(days=10)).isoformat()
            self.fine(loan, "lost", book["replacement_cost"] + 5.0, "paid" if n == 1 else "unpaid", reported,
                      f"replacement of '{book['title']}'")

    def add_holds(self) -> None:
        """Ready holds on returned copies (some uncollected past pickup), and queues on titles with no copy in."""
        rng = self.rng
        hid = 601
        isbns = sorted(self.books)
        for isbn in isbns:
            copies = [c for c in self.copies.values() if c["isbn"] == isbn]
            if self.books[isbn]["loan_period_days"] == 0:
                continue
            available = [c for c in copies if c["status"] == "available"]
            live = [ln for ln in self.loans if ln["isbn"] == isbn and ln["status"] == "active"]
            holders = [m for m in sorted(self.members) if self.members[m]["status"] == "active"
                       and self.members[m]["expiry_date"] >= TODAY.isoformat()
                       and not any(ln["member_id"] == m for ln in live)]
            rng.shuffle(holders)
            if available and rng.random() < 0.2:
                copy = available[0]
                ready = TODAY - timedelta(days=[10, 2, 9, 4, 0][(hid - 601) % 5])
                member = holders.pop()
                hold = {"hold_id": f"H-{hid}", "isbn": isbn, "member_id": member,
                        "pickup_branch": self.members[member]["home_branch"],
                        "placed_date": (ready - timedelta(days=rng.randint(5, 20))).isoformat(), "status": "ready",
                        "copy_id": copy["copy_id"], "ready_date": ready.isoformat(),
                        "pickup_by": (ready + timedelta(days=7)).isoformat()}
                copy.update(status="on_hold_shelf", hold_id=hold["hold_id"], branch=hold["pickup_branch"])
                self.holds[hold["hold_id"]] = hold
                hid += 1
                available = available[1:]
            if not available and live and rng.random() < 0.6:
                last_start = max(ln["checkout_date"] for ln in live)
                for _ in range(rng.choice([1, 1, 2, 3])):
                    member = holders.pop()
                    placed = min(date.fromisoformat(last_start) + timedelta(days=rng.randint(1, 12)),
                                 TODAY - timedelta(days=1))
                    self.holds[f"H-{hid}"] = {"hold_id": f"H-{hid}", "isbn": isbn, "member_id": member,
                                              "pickup_branch": rng.choice(BRANCHES), "placed_date": placed.isoformat(),
                                              "status": "waiting", "copy_id": None, "ready_date": None,
                                              "pickup_by": None}
                    hid += 1
        # a ready hold was first in its queue: it was placed before every hold still waiting
        for hold in self.holds.values():
            waiting = [h["placed_date"] for h in self.holds.values()
                       if h["isbn"] == hold["isbn"] and h["status"] == "waiting"]
            if hold["status"] == "ready" and waiting and min(waiting) <= hold["placed_date"]:
                hold["placed_date"] = (date.fromisoformat(min(waiting)) - timedelta(days=1)).isoformat()
        # a few closed holds for history
        for n, loan in enumerate(ln for ln in self.loans if ln["status"] == "returned"):
            if n % 9 == 0 and n < 60:
                start = date.fromisoformat(loan["checkout_date"])
                status = "fulfilled" if n % 2 == 0 else "cancelled"
                self.holds[f"H-{hid}"] = {"hold_id": f"H-{hid}", "isbn": loan["isbn"], "member_id": loan["member_id"],
                                          "pickup_branch": self.members[loan["member_id"]]["home_branch"],
                                          "placed_date": (start - timedelta(days=6)).isoformat(), "status": status,
                                          "copy_id": loan["copy_id"] if status == "fulfilled" else None,
                                          "ready_date": (start - timedelta(days=1)).isoformat()
                                          if status == "fulfilled" else None,
                                          "pickup_by": (start + timedelta(days=6)).isoformat()
                                          if status == "fulfilled" else None}
                hid += 1

    def state(self) -> dict:
        """The JSON state, keyed by the environment's attribute names."""
        return {"today": TODAY.isoformat(), "members": self.members, "books": self.books, "copies": self.copies,
                "loans": {ln["loan_id"]: {k: ln[k] for k in ("loan_id", "copy_id", "isbn", "member_id",
                                                             "checkout_date", "due_date", "returned_date",
                                                             "renewals", "status")} for ln in self.loans},
                "holds": self.holds, "fines": self.fines}


def build() -> dict:
    """Build the default state."""
    builder = Builder()
    builder.add_members()
    builder.add_books()
    for cid in sorted(builder.copies):
        builder.simulate_copy(cid)
    builder.number_loans()
    builder.add_losses()
    builder.add_holds()
    return builder.state()


def main() -> None:
    """Write default_state.json next to this script."""
    state = build()
    (HERE / "default_state.json").write_text(json.dumps(state, indent=1, ensure_ascii=False) + "\n")
    counts = {k: len(v) for k, v in state.items() if isinstance(v, dict)}
    print(f"wrote {HERE / 'default_state.json'}: {counts}")


if __name__ == "__main__":
    main()
