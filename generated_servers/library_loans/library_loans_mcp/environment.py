"""Public library circulation desk: members, titles and copies, loans, holds and fines."""

from datetime import date, timedelta
from typing import Any, Dict, List, Literal, Optional, TypedDict


class MemberInfo(TypedDict):
    member_id: str
    name: str
    email: str
    phone: str
    membership_type: str  # "adult", "student", "senior" or "child"
    home_branch: str
    joined_date: str
    expiry_date: str
    status: str  # "active" or "suspended"


class BookInfo(TypedDict):
    isbn: str
    title: str
    author: str
    genre: str
    year: int
    loan_period_days: int  # 0 = reference only, never lent
    replacement_cost: float


class CopyInfo(TypedDict):
    copy_id: str
    isbn: str
    branch: str
    status: str  # "available", "on_loan", "on_hold_shelf", "lost" or "withdrawn"
    hold_id: Optional[str]  # the hold a copy on the hold shelf is kept for


class LoanInfo(TypedDict):
    loan_id: str
    copy_id: str
    isbn: str
    member_id: str
    checkout_date: str
    due_date: str
    returned_date: Optional[str]
    renewals: int
    status: str  # "active", "returned" or "lost"


class HoldInfo(TypedDict):
    hold_id: str
    isbn: str
    member_id: str
    pickup_branch: str
    placed_date: str
    status: str  # "waiting", "ready", "fulfilled", "cancelled" or "expired"
    copy_id: Optional[str]
    ready_date: Optional[str]
    pickup_by: Optional[str]


class FineInfo(TypedDict):
    fine_id: str
    member_id: str
    loan_id: Optional[str]
    reason: str  # "overdue", "lost" or "damaged"
    amount: float
    issued_date: str
    status: str  # "unpaid", "paid" or "waived"
    resolved_date: Optional[str]
    note: Optional[str]


LOAN_LIMITS = {"adult": 10, "student": 8, "senior": 10, "child": 5}
MAX_RENEWALS = 2
MAX_HOLDS = 5
HOLD_PICKUP_DAYS = 7
DAILY_FINE = 0.25
MAX_OVERDUE_FINE = 10.0
BLOCKING_BALANCE = 10.0
LOST_PROCESSING_FEE = 5.0


class LibraryLoans:
    """Circulation system of a three-branch public library."""

    def __init__(self) -> None:
        # The library's current date ("YYYY-MM-DD").
        self.today: str = "2026-05-12"
        # Members by member id.
        self.members: Dict[str, MemberInfo] = {}
        # Titles by ISBN.
        self.books: Dict[str, BookInfo] = {}
        # Physical copies by copy id (barcode).
        self.copies: Dict[str, CopyInfo] = {}
        # Loans by loan id.
        self.loans: Dict[str, LoanInfo] = {}
        # Holds (reservations) by hold id.
        self.holds: Dict[str, HoldInfo] = {}
        # Fines by fine id.
        self.fines: Dict[str, FineInfo] = {}

    # ----------------------------------------------------------------- helpers

    def _next_id(self, prefix: str, existing: Dict[str, Any], start: int) -> str:
        numbers = [int(key[len(prefix):]) for key in existing if key[len(prefix):].isdigit()]
        return f"{prefix}{max([*numbers, start - 1]) + 1}"

    def _plus_days(self, days: int) -> str:
        return (date.fromisoformat(self.today) + timedelta(days=days)).isoformat()

    def _balance(self, member_id: str) -> float:
        return round(sum(f["amount"] for f in self.fines.values()
                         if f["member_id"] == member_id and f["status"] == "unpaid"), 2)

    def _active_loans(self, member_id: str) -> List[LoanInfo]:
        return [ln for ln in self.loans.values() if ln["member_id"] == member_id and ln["status"] == "active"]

    def _checkout_problem(self, member_id: str) -> Optional[str]:
        """Why the member cannot borrow right now (None when they can)."""
        member = self.members.get(member_id)
        if member is None:
            return f"No member with id '{member_id}'."
        if member["status"] != "active":
            return f"Member {member_id} is {member['status']}."
        if member["expiry_date"] < self.today:
            return f"Membership of {member_id} expired on {member['expiry_date']}; renew it first."
        balance = self._balance(member_id)
        if balance >= BLOCKING_BALANCE:
            return f"Member {member_id} owes {balance:.2f} in fines; borrowing is blocked from {BLOCKING_BALANCE:.2f}."
        overdue = [ln["loan_id"] for ln in self._active_loans(member_id) if ln["due_date"] < self.today]
        if overdue:
            return f"Member {member_id} has overdue loans ({', '.join(overdue)}); return them first."
        if len(self._active_loans(member_id)) >= LOAN_LIMITS.get(member["membership_type"], 10):
            return f"Member {member_id} is at the {member['membership_type']} limit of " \
                   f"{LOAN_LIMITS.get(member['membership_type'], 10)} loans."
        return None

    def _waiting_holds(self, isbn: str) -> List[HoldInfo]:
        return sorted((h for h in self.holds.values() if h["isbn"] == isbn and h["status"] == "waiting"),
                      key=lambda h: (h["placed_date"], h["hold_id"]))

    def _shelve(self, copy: CopyInfo) -> Optional[str]:
        """Put a copy back into circulation: to the oldest waiting hold's shelf, else available."""
        queue = self._waiting_holds(copy["isbn"])
        if not queue:
            copy["status"] = "available"
            copy["hold_id"] = None
            return None
        hold = queue[0]
        hold.update(status="ready", copy_id=copy["copy_id"], ready_date=self.today,
                    pickup_by=self._plus_days(HOLD_PICKUP_DAYS))
        copy.update(status="on_hold_shelf", hold_id=hold["hold_id"], branch=hold["pickup_branch"])
        return hold["hold_id"]

    def _add_fine(self, member_id: str, loan_id: Optional[str], reason: str, amount: float,
                  note: Optional[str] = None) -> FineInfo:
        fine_id = self._next_id("F-", self.fines, 901)
        fine: FineInfo = {"fine_id": fine_id, "member_id": member_id, "loan_id": loan_id, "reason": reason,
                          "amount": round(amount, 2), "issued_date": self.today, "status": "unpaid",
                          "resolved_date": None, "note": note}
        self.fines[fine_id] = fine
        return fine

    # ----------------------------------------------------------------- queries

    def get_member(self, member_id: str) -> Dict[str, Any]:
        """Get a member's record with their active loan count and unpaid fine balance.

        Args:
            member_id: Member id, e.g. "M-2007".

        Returns:
            {"success": True, "data": member record plus "active_loans": int and "fine_balance": float}.

        Constraints:
            Read-only; the id must exist.
        """
        member = self.members.get(member_id)
        if member is None:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        return {"success": True, "data": dict(member, active_loans=len(self._active_loans(member_id)),
                                              fine_balance=self._balance(member_id))}

    def find_members(self, name: Optional[str] = None, email: Optional[str] = None) -> Dict[str, Any]:
        """Find members by part of the name or by exact email (both ignore case).

        Args:
            name: Text that must appear in the member's name.
            email: Exact email address.

        Returns:
            {"success": True, "data": [member records]} (possibly empty).

        Constraints:
            Give at least one criterion.
        """
        if not name and not email:
            return {"success": False, "error": "Give a name or an email to search for."}
        found = [m for m in self.members.values()
                 if (not name or name.lower() in m["name"].lower())
                 and (not email or m["email"].lower() == email.lower())]
        return {"success": True, "data": found}

    def search_catalog(self, query: Optional[str] = None, genre: Optional[str] = None,
                       available_only: bool = False) -> Dict[str, Any]:
        """Search titles by title or author text and genre, with copy counts per status.

        Args:
            query: Text that must appear in the title or the author, ignoring case.
            genre: Exact genre, ignoring case, e.g. "mystery".
            available_only: Only titles with at least one available copy.

        Returns:
            {"success": True, "data": [book records plus "available_copies" and "total_copies"]}.

        Constraints:
            Read-only; lost and withdrawn copies are not counted.
        """
        found = []
        for book in self.books.values():
            if query and query.lower() not in book["title"].lower() and query.lower() not in book["author"].lower():
                continue
            if genre and book["genre"].lower() != genre.lower():
                continue
            copies = [c for c in self.copies.values() if c["isbn"] == book["isbn"]
                      and c["status"] not in ("lost", "withdrawn")]
            available = sum(1 for c in copies if c["status"] == "available")
            if available_only and not available:
                continue
            found.append(dict(book, available_copies=available, total_copies=len(copies)))
        return {"success": True, "data": sorted(found, key=lambda b: b["title"])}

    def get_book(self, isbn: str) -> Dict[str, Any]:
        """Get a title with every copy (branch, status), its hold queue length and next due date.

        Args:
            isbn: The title's ISBN.

        Returns:
            {"success": True, "data": {"book": ..., "copies": [...], "waiting_holds": int,
            "next_due_date": str | None}}.

        Constraints:
            Read-only.
        """
        book = self.books.get(isbn)
        if book is None:
            return {"success": False, "error": f"No title with ISBN '{isbn}'."}
        copies = sorted((c for c in self.copies.values() if c["isbn"] == isbn), key=lambda c: c["copy_id"])
        dues = [ln["due_date"] for ln in self.loans.values() if ln["isbn"] == isbn and ln["status"] == "active"]
        return {"success": True, "data": {"book": book, "copies": copies,
                                          "waiting_holds": len(self._waiting_holds(isbn)),
                                          "next_due_date": min(dues) if dues else None}}

    def get_copy(self, copy_id: str) -> Dict[str, Any]:
        """Look up a copy by barcode, with its title, current loan and the hold it is kept for.

        Args:
            copy_id: Copy barcode, e.g. "C-30012".

        Returns:
            {"success": True, "data": {"copy": ..., "title": str, "current_loan": loan | None,
            "hold": hold | None}}.

        Constraints:
            Read-only.
        """
        copy = self.copies.get(copy_id)
        if copy is None:
            return {"success": False, "error": f"No copy with id '{copy_id}'."}
        loan = next((ln for ln in self.loans.values() if ln["copy_id"] == copy_id and ln["status"] == "active"), None)
        book = self.books.get(copy["isbn"])
        return {"success": True, "data": {"copy": copy, "title": book["title"] if book else "",
                                          "current_loan": loan, "hold": self.holds.get(copy["hold_id"] or "")}}

    def list_loans(self, member_id: Optional[str] = None,
                   status: Optional[Literal["active", "returned", "lost"]] = None,
                   overdue_only: bool = False) -> Dict[str, Any]:
        """List loans by member and status, or only overdue ones, with the title of each.

        Args:
            member_id: Only this member's loans.
            status: Only loans with this status.
            overdue_only: Only active loans past their due date.

        Returns:
            {"success": True, "data": [loan records plus "title" and "days_overdue"]} sorted by due date.

        Constraints:
            Read-only.
        """
        if member_id is not None and member_id not in self.members:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        found = []
        for loan in self.loans.values():
            late = loan["status"] == "active" and loan["due_date"] < self.today
            if (member_id is None or loan["member_id"] == member_id) and (status is None or loan["status"] == status) \
                    and (not overdue_only or late):
                days = (date.fromisoformat(self.today) - date.fromisoformat(loan["due_date"])).days if late else 0
                title = self.books[loan["isbn"]]["title"] if loan["isbn"] in self.books else ""
                found.append(dict(loan, title=title, days_overdue=days))
        return {"success": True, "data": sorted(found, key=lambda ln: (ln["due_date"], ln["loan_id"]))}

    def list_holds(self, member_id: Optional[str] = None, isbn: Optional[str] = None,
                   status: Optional[Literal["waiting", "ready", "fulfilled", "cancelled", "expired"]] = None
                   ) -> Dict[str, Any]:
        """List holds by member, title and status.

        Args:
            member_id: Only this member's holds.
            isbn: Only holds on this title.
            status: Only holds with this status.

        Returns:
            {"success": True, "data": [hold records plus "title"]} sorted by placed date.

        Constraints:
            Read-only.
        """
        found = [dict(h, title=self.books[h["isbn"]]["title"] if h["isbn"] in self.books else "")
                 for h in self.holds.values()
                 if (member_id is None or h["member_id"] == member_id) and (isbn is None or h["isbn"] == isbn)
                 and (status is None or h["status"] == status)]
        return {"success": True, "data": sorted(found, key=lambda h: (h["placed_date"], h["hold_id"]))}

    def list_fines(self, member_id: str, status: Optional[Literal["unpaid", "paid", "waived"]] = None
                   ) -> Dict[str, Any]:
        """List a member's fines and their unpaid balance.

        Args:
            member_id: Member id.
            status: Only fines with this status.

        Returns:
            {"success": True, "data": {"fines": [fine records], "unpaid_balance": float}}.

        Constraints:
            Read-only.
        """
        if member_id not in self.members:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        fines = sorted((f for f in self.fines.values() if f["member_id"] == member_id
                        and (status is None or f["status"] == status)), key=lambda f: f["fine_id"])
        return {"success": True, "data": {"fines": fines, "unpaid_balance": self._balance(member_id)}}

    def check_borrowing_status(self, member_id: str) -> Dict[str, Any]:
        """Tell whether a member may borrow now, and why not.

        Args:
            member_id: Member id.

        Returns:
            {"success": True, "data": {"can_borrow": bool, "reason": str, "loans_left": int}}.

        Constraints:
            Read-only; checks status, membership expiry, fines (blocked from 10.00), overdue loans and the
            loan limit (adult 10, student 8, senior 10, child 5).
        """
        member = self.members.get(member_id)
        if member is None:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        problem = self._checkout_problem(member_id)
        left = LOAN_LIMITS.get(member["membership_type"], 10) - len(self._active_loans(member_id))
        return {"success": True, "data": {"can_borrow": problem is None, "reason": problem or "May borrow.",
                                          "loans_left": max(left, 0)}}

    # ----------------------------------------------------------- state changes

    def checkout(self, member_id: str, copy_id: str) -> Dict[str, Any]:
        """Lend a copy to a member; a copy on the hold shelf can only go to the member it is held for.

        Args:
            member_id: Borrowing member.
            copy_id: Copy barcode, e.g. "C-30012".

        Returns:
            {"success": True, "message": ..., "data": new loan record}.

        Constraints:
            The member must be able to borrow (see check_borrowing_status); reference-only titles are never
            lent; the copy must be available, or on the hold shelf for this member (the hold is fulfilled).
            The due date is today plus the title's loan period.
        """
        problem = self._checkout_problem(member_id)
        if problem:
            return {"success": False, "error": problem}
        copy = self.copies.get(copy_id)
        if copy is None:
            return {"success": False, "error": f"No copy with id '{copy_id}'."}
        book = self.books[copy["isbn"]]
        if book["loan_period_days"] <= 0:
            return {"success": False, "error": f"'{book['title']}' is reference only and cannot be borrowed."}
        hold = self.holds.get(copy["hold_id"] or "")
        if copy["status"] == "on_hold_shelf":
            if hold is None or hold["member_id"] != member_id:
                return {"success": False, "error": f"Copy {copy_id} is on the hold shelf for another member."}
        elif copy["status"] != "available":
            return {"success": False, "error": f"Copy {copy_id} is {copy['status']}."}
        if any(ln["isbn"] == copy["isbn"] for ln in self._active_loans(member_id)):
            return {"success": False, "error": f"Member {member_id} already has a copy of '{book['title']}' on loan."}
        loan_id = self._next_id("L-", self.loans, 8001)
        loan: LoanInfo = {"loan_id": loan_id, "copy_id": copy_id, "isbn": copy["isbn"], "member_id": member_id,
                          "checkout_date": self.today, "due_date": self._plus_days(book["loan_period_days"]),
                          "returned_date": None, "renewals": 0, "status": "active"}
        if hold is not None and copy["status"] == "on_hold_shelf":
            hold["status"] = "fulfilled"
        copy["status"] = "on_loan"
        copy["hold_id"] = None
        self.loans[loan_id] = loan
        return {"success": True, "message": f"'{book['title']}' lent to {member_id}, due {loan['due_date']}.",
                "data": loan}

    def return_copy(self, copy_id: str) -> Dict[str, Any]:
        """Check a copy back in; charge any overdue fine and send the copy to the next hold if one waits.

        Args:
            copy_id: Copy barcode.

        Returns:
            {"success": True, "message": ..., "data": {"loan_id", "days_overdue", "fine" (record or None),
            "hold_ready" (hold id or None)}}.

        Constraints:
            The copy must be on loan. Overdue fines are 0.25 per day, at most 10.00 per item; child members
            are never charged overdue fines.
        """
        loan = next((ln for ln in self.loans.values() if ln["copy_id"] == copy_id and ln["status"] == "active"), None)
        copy = self.copies.get(copy_id)
        if copy is None:
            return {"success": False, "error": f"No copy with id '{copy_id}'."}
        if loan is None:
            return {"success": False, "error": f"Copy {copy_id} is not on loan."}
        days = max((date.fromisoformat(self.today) - date.fromisoformat(loan["due_date"])).days, 0)
        loan["status"] = "returned"
        loan["returned_date"] = self.today
        fine = None
        member = self.members.get(loan["member_id"])
        if days > 0 and member is not None and member["membership_type"] != "child":
            fine = self._add_fine(loan["member_id"], loan["loan_id"], "overdue",
                                  min(days * DAILY_FINE, MAX_OVERDUE_FINE), f"{days} days late")
        hold_id = self._shelve(copy)
        note = f" Overdue {days} days, fine {fine['amount']:.2f}." if fine else ""
        note += f" Held for hold {hold_id}." if hold_id else ""
        return {"success": True, "message": f"Copy {copy_id} returned.{note}",
                "data": {"loan_id": loan["loan_id"], "days_overdue": days, "fine": fine, "hold_ready": hold_id}}

    def renew_loan(self, loan_id: str) -> Dict[str, Any]:
        """Renew an active loan: the new due date is today plus the title's loan period.

        Args:
            loan_id: Loan id, e.g. "L-8042".

        Returns:
            {"success": True, "message": ..., "data": {"due_date": str, "renewals": int}}.

        Constraints:
            Not overdue; at most 2 renewals; not when other members are waiting for the title.
        """
        loan = self.loans.get(loan_id)
        if loan is None:
            return {"success": False, "error": f"No loan with id '{loan_id}'."}
        if loan["status"] != "active":
            return {"success": False, "error": f"Loan {loan_id} is {loan['status']}."}
        if loan["due_date"] < self.today:
            return {"success": False, "error": f"Loan {loan_id} is overdue since {loan['due_date']}; return it instead."}
        if loan["renewals"] >= MAX_RENEWALS:
            return {"success": False, "error": f"Loan {loan_id} was already renewed {MAX_RENEWALS} times."}
        if self._waiting_holds(loan["isbn"]):
            return {"success": False, "error": f"Other members are waiting for this title; loan {loan_id} cannot be "
                                               "renewed."}
        loan["due_date"] = self._plus_days(self.books[loan["isbn"]]["loan_period_days"])
        loan["renewals"] += 1
        return {"success": True, "message": f"Loan {loan_id} renewed until {loan['due_date']}.",
                "data": {"due_date": loan["due_date"], "renewals": loan["renewals"]}}

    def renew_all_loans(self, member_id: str) -> Dict[str, Any]:
        """Renew every renewable active loan of a member (bulk); the others are listed with the reason.

        Args:
            member_id: Member id.

        Returns:
            {"success": True, "message": ..., "data": {"renewed": {loan_id: due_date}, "not_renewed":
            {loan_id: reason}}}.

        Constraints:
            Each loan follows renew_loan's rules; fails only when the member has no active loans.
        """
        if member_id not in self.members:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        active = sorted(self._active_loans(member_id), key=lambda ln: ln["loan_id"])
        if not active:
            return {"success": False, "error": f"Member {member_id} has no active loans."}
        renewed, skipped = {}, {}
        for loan in active:
            result = self.renew_loan(loan["loan_id"])
            if result["success"]:
                renewed[loan["loan_id"]] = result["data"]["due_date"]
            else:
                skipped[loan["loan_id"]] = result["error"]
        return {"success": True, "message": f"Renewed {len(renewed)} of {len(active)} loan(s).",
                "data": {"renewed": renewed, "not_renewed": skipped}}

    def place_hold(self, member_id: str, isbn: str,
                   pickup_branch: Literal["Central", "Riverside", "Hillcrest"]) -> Dict[str, Any]:
        """Reserve a title that has no copy available; the member joins the end of the queue.

        Args:
            member_id: Member placing the hold.
            isbn: Title to reserve.
            pickup_branch: Branch where the member will collect it.

        Returns:
            {"success": True, "message": ..., "data": new hold record plus "queue_position"}.

        Constraints:
            Active, unexpired members; at most 5 open (waiting or ready) holds; not for titles with an
            available copy (borrow it instead), reference-only titles, titles the member has on loan, or
            titles the member already has an open hold on.
        """
        member = self.members.get(member_id)
        if member is None:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        if member["status"] != "active" or member["expiry_date"] < self.today:
            return {"success": False, "error": f"Member {member_id} is not active or the membership has expired."}
        book = self.books.get(isbn)
        if book is None:
            return {"success": False, "error": f"No title with ISBN '{isbn}'."}
        if book["loan_period_days"] <= 0:
            return {"success": False, "error": f"'{book['title']}' is reference only."}
        available = [c["copy_id"] for c in self.copies.values() if c["isbn"] == isbn and c["status"] == "available"]
        if available:
            return {"success": False, "error": f"Copy {available[0]} of '{book['title']}' is available now; "
                                               "borrow it instead of placing a hold."}
        if any(ln["isbn"] == isbn for ln in self._active_loans(member_id)):
            return {"success": False, "error": f"Member {member_id} already has '{book['title']}' on loan."}
        open_holds = [h for h in self.holds.values() if h["member_id"] == member_id and h["status"] in ("waiting", "ready")]
        if any(h["isbn"] == isbn for h in open_holds):
            return {"success": False, "error": f"Member {member_id} already has a hold on '{book['title']}'."}
        if len(open_holds) >= MAX_HOLDS:
            return {"success": False, "error": f"Member {member_id} already has {MAX_HOLDS} open holds."}
        hold_id = self._next_id("H-", self.holds, 601)
        hold: HoldInfo = {"hold_id": hold_id, "isbn": isbn, "member_id": member_id, "pickup_branch": pickup_branch,
                          "placed_date": self.today, "status": "waiting", "copy_id": None, "ready_date": None,
                          "pickup_by": None}
        self.holds[hold_id] = hold
        position = len(self._waiting_holds(isbn))
        return {"success": True, "message": f"Hold {hold_id} placed; position {position} in the queue.",
                "data": dict(hold, queue_position=position)}

    def cancel_hold(self, hold_id: str) -> Dict[str, Any]:
        """Cancel a waiting or ready hold; a copy kept for it goes to the next hold or back on the shelf.

        Args:
            hold_id: Hold id, e.g. "H-612".

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only waiting or ready holds.
        """
        hold = self.holds.get(hold_id)
        if hold is None:
            return {"success": False, "error": f"No hold with id '{hold_id}'."}
        if hold["status"] not in ("waiting", "ready"):
            return {"success": False, "error": f"Hold {hold_id} is already {hold['status']}."}
        was_ready = hold["status"] == "ready"
        hold["status"] = "cancelled"
        note = ""
        copy = self.copies.get(hold["copy_id"] or "")
        if was_ready and copy is not None:
            next_hold = self._shelve(copy)
            note = f" Copy {copy['copy_id']} now held for {next_hold}." if next_hold else \
                f" Copy {copy['copy_id']} is available again."
        return {"success": True, "message": f"Hold {hold_id} cancelled.{note}"}

    def expire_uncollected_holds(self) -> Dict[str, Any]:
        """Expire every ready hold whose pickup date has passed (bulk) and pass each copy on.

        Returns:
            {"success": True, "message": ..., "data": {"expired": [hold ids], "passed_to": {copy_id: hold id or
            "shelf"}}}.

        Constraints:
            Only ready holds with pickup_by before today.
        """
        expired, passed = [], {}
        for hold in sorted(self.holds.values(), key=lambda h: h["hold_id"]):
            if hold["status"] == "ready" and hold["pickup_by"] is not None and hold["pickup_by"] < self.today:
                hold["status"] = "expired"
                expired.append(hold["hold_id"])
                copy = self.copies.get(hold["copy_id"] or "")
                if copy is not None:
                    passed[copy["copy_id"]] = self._shelve(copy) or "shelf"
        return {"success": True, "message": f"Expired {len(expired)} uncollected hold(s).",
                "data": {"expired": expired, "passed_to": passed}}

    def report_lost(self, loan_id: str) -> Dict[str, Any]:
        """Record a borrowed copy as lost and charge its replacement cost plus a 5.00 processing fee.

        Args:
            loan_id: Active loan of the lost copy.

        Returns:
            {"success": True, "message": ..., "data": the lost-item fine record}.

        Constraints:
            Only active loans. No overdue fine is charged on a lost item.
        """
        loan = self.loans.get(loan_id)
        if loan is None:
            return {"success": False, "error": f"No loan with id '{loan_id}'."}
        if loan["status"] != "active":
            return {"success": False, "error": f"Loan {loan_id} is {loan['status']}; only active loans can be lost."}
        book = self.books[loan["isbn"]]
        loan["status"] = "lost"
        if loan["copy_id"] in self.copies:
            self.copies[loan["copy_id"]]["status"] = "lost"
        fine = self._add_fine(loan["member_id"], loan_id, "lost", book["replacement_cost"] + LOST_PROCESSING_FEE,
                              f"replacement of '{book['title']}'")
        return {"success": True, "message": f"Copy {loan['copy_id']} recorded lost; {fine['amount']:.2f} charged.",
                "data": fine}

    def mark_copy_found(self, copy_id: str) -> Dict[str, Any]:
        """Undo a loss: a lost copy that turned up is checked in and its unpaid lost-item fine is waived.

        Args:
            copy_id: Copy barcode of a lost copy.

        Returns:
            {"success": True, "message": ..., "data": {"waived_fine": fine id or None, "hold_ready": hold id
            or None}}.

        Constraints:
            Only copies with status "lost"; a lost-item fine that was already paid is kept (refunds are
            handled by the finance office).
        """
        copy = self.copies.get(copy_id)
        if copy is None:
            return {"success": False, "error": f"No copy with id '{copy_id}'."}
        if copy["status"] != "lost":
            return {"success": False, "error": f"Copy {copy_id} is {copy['status']}, not lost."}
        waived = None
        loan = next((ln for ln in self.loans.values() if ln["copy_id"] == copy_id and ln["status"] == "lost"), None)
        if loan is not None:
            loan["status"] = "returned"
            loan["returned_date"] = self.today
            for fine in self.fines.values():
                if fine["loan_id"] == loan["loan_id"] and fine["reason"] == "lost" and fine["status"] == "unpaid":
                    fine.update(status="waived", resolved_date=self.today, note="lost copy found")
                    waived = fine["fine_id"]
        hold_id = self._shelve(copy)
        return {"success": True, "message": f"Copy {copy_id} is back in circulation.",
                "data": {"waived_fine": waived, "hold_ready": hold_id}}

    def pay_fine(self, fine_id: str) -> Dict[str, Any]:
        """Record full payment of an unpaid fine.

        Args:
            fine_id: Fine id, e.g. "F-915".

        Returns:
            {"success": True, "message": ..., "data": {"unpaid_balance": float}}.

        Constraints:
            Only unpaid fines; partial payments are not accepted.
        """
        fine = self.fines.get(fine_id)
        if fine is None:
            return {"success": False, "error": f"No fine with id '{fine_id}'."}
        if fine["status"] != "unpaid":
            return {"success": False, "error": f"Fine {fine_id} is already {fine['status']}."}
        fine["status"] = "paid"
        fine["resolved_date"] = self.today
        return {"success": True, "message": f"Fine {fine_id} of {fine['amount']:.2f} paid.",
                "data": {"unpaid_balance": self._balance(fine["member_id"])}}

    def waive_fine(self, fine_id: str, reason: str) -> Dict[str, Any]:
        """Waive an unpaid overdue fine (staff discretion).

        Args:
            fine_id: Fine id.
            reason: Why it is waived (kept on the fine).

        Returns:
            {"success": True, "message": ..., "data": {"unpaid_balance": float}}.

        Constraints:
            Only unpaid overdue fines; lost and damage charges cannot be waived (use mark_copy_found if a
            lost copy turns up).
        """
        fine = self.fines.get(fine_id)
        if fine is None:
            return {"success": False, "error": f"No fine with id '{fine_id}'."}
        if fine["status"] != "unpaid":
            return {"success": False, "error": f"Fine {fine_id} is already {fine['status']}."}
        if fine["reason"] != "overdue":
            return {"success": False, "error": f"Fine {fine_id} is a {fine['reason']} charge; only overdue fines can "
                                               "be waived."}
        fine.update(status="waived", resolved_date=self.today, note=reason)
        return {"success": True, "message": f"Fine {fine_id} waived.",
                "data": {"unpaid_balance": self._balance(fine["member_id"])}}

    def register_member(self, name: str, email: str, phone: str,
                        membership_type: Literal["adult", "student", "senior", "child"],
                        home_branch: Literal["Central", "Riverside", "Hillcrest"]) -> Dict[str, Any]:
        """Register a new member; the membership runs for one year.

        Args:
            name: Full name.
            email: Email address; must be unique among members.
            phone: Phone number.
            membership_type: "adult", "student", "senior" or "child".
            home_branch: The member's usual branch.

        Returns:
            {"success": True, "message": ..., "data": new member record}.

        Constraints:
            Emails are unique; the email must contain "@".
        """
        if "@" not in email:
            return {"success": False, "error": f"'{email}' is not a valid email address."}
        clash = next((m["member_id"] for m in self.members.values() if m["email"].lower() == email.lower()), None)
        if clash:
            return {"success": False, "error": f"Email {email} already belongs to member {clash}."}
        member_id = self._next_id("M-", self.members, 2001)
        member: MemberInfo = {"member_id": member_id, "name": name, "email": email, "phone": phone,
                              "membership_type": membership_type, "home_branch": home_branch,
                              "joined_date": self.today, "expiry_date": self._plus_days(365), "status": "active"}
        self.members[member_id] = member
        return {"success": True, "message": f"Registered {name} as {member_id}.", "data": member}

    def renew_membership(self, member_id: str) -> Dict[str, Any]:
        """Extend a membership by one year (from its expiry date, or from today if already expired).

        Args:
            member_id: Member id.

        Returns:
            {"success": True, "message": ..., "data": {"expiry_date": str}}.

        Constraints:
            Not for suspended members; only within 30 days before expiry or after it; the unpaid fine
            balance must be below 10.00.
        """
        member = self.members.get(member_id)
        if member is None:
            return {"success": False, "error": f"No member with id '{member_id}'."}
        if member["status"] == "suspended":
            return {"success": False, "error": f"Member {member_id} is suspended; see a librarian."}
        if member["expiry_date"] > self._plus_days(30):
            return {"success": False, "error": f"Membership of {member_id} runs until {member['expiry_date']}; "
                                               "it can be renewed from 30 days before that."}
        balance = self._balance(member_id)
        if balance >= BLOCKING_BALANCE:
            return {"success": False, "error": f"Member {member_id} owes {balance:.2f}; settle fines below "
                                               f"{BLOCKING_BALANCE:.2f} first."}
        start = max(member["expiry_date"], self.today)
        member["expiry_date"] = (date.fromisoformat(start) + timedelta(days=365)).isoformat()
        return {"success": True, "message": f"Membership of {member_id} renewed until {member['expiry_date']}.",
                "data": {"expiry_date": member["expiry_date"]}}
