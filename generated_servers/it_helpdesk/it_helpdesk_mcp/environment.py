"""IT help desk: employees and their devices, support tickets routed to queues, worked by agents under SLAs."""

from datetime import date, timedelta
from typing import Any, Dict, List, Literal, Optional, TypedDict


class EmployeeInfo(TypedDict):
    employee_id: str
    name: str
    email: str
    department: str
    title: str
    location: str
    status: str  # active | on_leave | terminated


class AssetInfo(TypedDict):
    asset_id: str
    asset_type: str  # laptop | desktop | monitor | phone | tablet
    model: str
    serial_number: str
    status: str  # in_use | in_stock | in_repair | retired
    assigned_to: Optional[str]
    purchase_date: str
    warranty_end: str


class QueueInfo(TypedDict):
    queue_id: str
    name: str
    categories: List[str]


class AgentInfo(TypedDict):
    agent_id: str
    name: str
    email: str
    queue_ids: List[str]
    max_open_tickets: int
    active: bool


class TicketInfo(TypedDict):
    ticket_id: str
    title: str
    description: str
    category: str
    priority: str  # P1 (critical) .. P4 (low)
    status: str  # new | assigned | in_progress | on_hold | resolved | closed | cancelled
    requester_id: str
    asset_id: Optional[str]
    queue_id: str
    assignee_id: Optional[str]
    created_date: str
    due_date: str
    resolved_date: Optional[str]
    resolution: Optional[str]
    reopen_count: int


class CommentInfo(TypedDict):
    comment_id: str
    ticket_id: str
    author_id: str
    body: str
    internal: bool
    created_date: str


OPEN_STATUSES = ("new", "assigned", "in_progress", "on_hold")
REOPEN_WINDOW_DAYS = 7


class ITHelpdesk:
    """An internal IT service desk with an asset register, ticket queues, agents and SLA due dates."""

    def __init__(self):
        # Employees who may raise tickets and hold devices, keyed by employee_id.
        self.employees: Dict[str, EmployeeInfo] = {}
        # Hardware asset register, keyed by asset_id.
        self.assets: Dict[str, AssetInfo] = {}
        # Support queues; each handles a set of ticket categories.
        self.queues: Dict[str, QueueInfo] = {}
        # Help desk agents and the queues they work.
        self.agents: Dict[str, AgentInfo] = {}
        # Support tickets, keyed by ticket_id (INC-nnnn).
        self.tickets: Dict[str, TicketInfo] = {}
        # Ticket comments, keyed by comment_id (CMT-nnnn).
        self.comments: Dict[str, CommentInfo] = {}
        # Resolution SLA in calendar days per priority (P1..P4).
        self.sla_days: Dict[str, int] = {}
        # The current date (YYYY-MM-DD).
        self.today: str = ""

    # ----- helpers -------------------------------------------------------------------------------

    def _next_id(self, records: Dict[str, Any], prefix: str, width: int) -> str:
        numbers = [int(k[len(prefix):]) for k in records if k.startswith(prefix) and k[len(prefix):].isdigit()]
        return f"{prefix}{(max(numbers) + 1 if numbers else 1):0{width}d}"

    def _add_days(self, day: str, days: int) -> str:
        return (date.fromisoformat(day) + timedelta(days=days)).isoformat()

    def _open_count(self, agent_id: str) -> int:
        return sum(1 for t in self.tickets.values() if t["assignee_id"] == agent_id and t["status"] in OPEN_STATUSES)

    def _queue_for_category(self, category: str) -> Optional[str]:
        for queue in self.queues.values():
            if category in queue["categories"]:
                return queue["queue_id"]
        return None

    def _comment(self, ticket_id: str, author_id: str, body: str, internal: bool) -> str:
        comment_id = self._next_id(self.comments, "CMT-", 4)
        self.comments[comment_id] = {
            "comment_id": comment_id, "ticket_id": ticket_id, "author_id": author_id,
            "body": body, "internal": internal, "created_date": self.today,
        }
        return comment_id

    def _with_sla(self, ticket: TicketInfo) -> Dict[str, Any]:
        view: Dict[str, Any] = dict(ticket)
        is_open = ticket["status"] in OPEN_STATUSES
        view["overdue"] = is_open and ticket["due_date"] < self.today
        view["days_to_due"] = (date.fromisoformat(ticket["due_date"]) - date.fromisoformat(self.today)).days
        return view

    # ----- queries -------------------------------------------------------------------------------

    def get_employee(self, employee_id: Optional[str] = None, email: Optional[str] = None) -> dict:
        """Look up one employee by employee id or by email address.

        Args:
            employee_id: The employee id, e.g. "E1004".
            email: The employee's email address (case-insensitive).

        Returns:
            {"success": True, "data": EmployeeInfo} or {"success": False, "error": str}.

        Constraints:
            Give employee_id or email.
        """
        if employee_id:
            if employee_id not in self.employees:
                return {"success": False, "error": f"No employee with id '{employee_id}'."}
            return {"success": True, "data": self.employees[employee_id]}
        if email:
            for emp in self.employees.values():
                if emp["email"].lower() == email.strip().lower():
                    return {"success": True, "data": emp}
            return {"success": False, "error": f"No employee with email '{email}'."}
        return {"success": False, "error": "Give an employee_id or an email."}

    def search_employees(self, name: Optional[str] = None, department: Optional[str] = None) -> dict:
        """Find employees whose name contains a text and/or who work in a department.

        Args:
            name: Part of the employee's name (case-insensitive).
            department: Exact department name, e.g. "Finance" (case-insensitive).

        Returns:
            {"success": True, "data": [EmployeeInfo, ...]} sorted by employee id.

        Constraints:
            Read-only. Terminated and on-leave employees are included; check their status.
        """
        found = [
            emp for emp in self.employees.values()
            if (not name or name.strip().lower() in emp["name"].lower())
            and (not department or emp["department"].lower() == department.strip().lower())
        ]
        return {"success": True, "data": sorted(found, key=lambda e: e["employee_id"])}

    def get_asset(self, asset_id: Optional[str] = None, serial_number: Optional[str] = None) -> dict:
        """Look up one asset by asset id or serial number, with its warranty status.

        Args:
            asset_id: The asset id, e.g. "AST-2010".
            serial_number: The manufacturer serial number (case-insensitive).

        Returns:
            {"success": True, "data": AssetInfo plus "under_warranty": bool} or {"success": False, "error": str}.

        Constraints:
            Give asset_id or serial_number.
        """
        asset: Optional[AssetInfo] = None
        if asset_id:
            asset = self.assets.get(asset_id)
        elif serial_number:
            asset = next((a for a in self.assets.values()
                          if a["serial_number"].lower() == serial_number.strip().lower()), None)
        else:
            return {"success": False, "error": "Give an asset_id or a serial_number."}
        if asset is None:
            return {"success": False, "error": f"No asset matches '{asset_id or serial_number}'."}
        view: Dict[str, Any] = dict(asset)
        view["under_warranty"] = asset["warranty_end"] >= self.today
        return {"success": True, "data": view}

    def list_assets(self, employee_id: Optional[str] = None, status: Optional[str] = None,
                    asset_type: Optional[str] = None) -> dict:
        """List assets, optionally only those held by an employee, in a status, or of a type.

        Args:
            employee_id: Only assets assigned to this employee.
            status: One of in_use, in_stock, in_repair, retired.
            asset_type: One of laptop, desktop, monitor, phone, tablet.

        Returns:
            {"success": True, "data": [AssetInfo, ...]} sorted by asset id.

        Constraints:
            Read-only. Retired assets are included unless a status filter excludes them.
        """
        found = [
            a for a in self.assets.values()
            if (employee_id is None or a["assigned_to"] == employee_id)
            and (status is None or a["status"] == status)
            and (asset_type is None or a["asset_type"] == asset_type)
        ]
        return {"success": True, "data": sorted(found, key=lambda a: a["asset_id"])}

    def get_ticket(self, ticket_id: str) -> dict:
        """Get a ticket with its SLA position (overdue flag and days until the due date).

        Args:
            ticket_id: The ticket id, e.g. "INC-3012".

        Returns:
            {"success": True, "data": TicketInfo plus "overdue" and "days_to_due"} or {"success": False, "error": str}.

        Constraints:
            Read-only. overdue is True only for open tickets whose due_date is before today.
        """
        if ticket_id not in self.tickets:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        return {"success": True, "data": self._with_sla(self.tickets[ticket_id])}

    def list_tickets(self, status: Optional[str] = None, priority: Optional[str] = None,
                     queue_id: Optional[str] = None, assignee_id: Optional[str] = None,
                     requester_id: Optional[str] = None, keyword: Optional[str] = None,
                     open_only: bool = False, overdue_only: bool = False) -> dict:
        """List tickets matching every given filter, oldest first.

        Args:
            status: One of new, assigned, in_progress, on_hold, resolved, closed, cancelled.
            priority: One of P1, P2, P3, P4.
            queue_id: Only tickets in this queue, e.g. "Q-HW".
            assignee_id: Only tickets assigned to this agent, e.g. "AG03".
            requester_id: Only tickets raised by this employee.
            keyword: Text that must appear in the title or description (case-insensitive).
            open_only: Only tickets that are not resolved, closed or cancelled.
            overdue_only: Only open tickets past their SLA due date.

        Returns:
            {"success": True, "data": [ticket with SLA fields, ...]}.

        Constraints:
            Read-only. Open means new, assigned, in_progress or on_hold.
        """
        found = []
        for t in self.tickets.values():
            if status is not None and t["status"] != status:
                continue
            if priority is not None and t["priority"] != priority:
                continue
            if queue_id is not None and t["queue_id"] != queue_id:
                continue
            if assignee_id is not None and t["assignee_id"] != assignee_id:
                continue
            if requester_id is not None and t["requester_id"] != requester_id:
                continue
            if keyword and keyword.lower() not in (t["title"] + " " + t["description"]).lower():
                continue
            view = self._with_sla(t)
            if open_only and t["status"] not in OPEN_STATUSES:
                continue
            if overdue_only and not view["overdue"]:
                continue
            found.append(view)
        found.sort(key=lambda v: (v["created_date"], v["ticket_id"]))
        return {"success": True, "data": found}

    def list_ticket_comments(self, ticket_id: str, include_internal: bool = True) -> dict:
        """List the comments on a ticket in the order they were written.

        Args:
            ticket_id: The ticket id.
            include_internal: Whether to include internal (agent-only) notes.

        Returns:
            {"success": True, "data": [CommentInfo, ...]} or {"success": False, "error": str}.

        Constraints:
            Read-only. Internal notes are visible to agents only; leave them out when quoting to a
            requester.
        """
        if ticket_id not in self.tickets:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        found = [c for c in self.comments.values()
                 if c["ticket_id"] == ticket_id and (include_internal or not c["internal"])]
        return {"success": True, "data": sorted(found, key=lambda c: c["comment_id"])}

    def list_agents(self, queue_id: Optional[str] = None, available_only: bool = False) -> dict:
        """List help desk agents with their open-ticket load and remaining capacity.

        Args:
            queue_id: Only agents who work this queue.
            available_only: Only active agents with capacity for at least one more ticket.

        Returns:
            {"success": True, "data": [AgentInfo plus "open_tickets" and "capacity_left", ...]}.

        Constraints:
            Read-only. Inactive agents always have capacity_left 0.
        """
        found = []
        for agent in sorted(self.agents.values(), key=lambda a: a["agent_id"]):
            if queue_id is not None and queue_id not in agent["queue_ids"]:
                continue
            load = self._open_count(agent["agent_id"])
            left = max(agent["max_open_tickets"] - load, 0) if agent["active"] else 0
            if available_only and left == 0:
                continue
            view: Dict[str, Any] = dict(agent)
            view["open_tickets"] = load
            view["capacity_left"] = left
            found.append(view)
        return {"success": True, "data": found}

    def list_queues(self) -> dict:
        """List the support queues with the categories they handle and their open and overdue ticket counts.

        Returns:
            {"success": True, "data": [QueueInfo plus "open_tickets" and "overdue_tickets", ...]}.

        Constraints:
            Read-only. A ticket is routed to the queue whose categories include its category.
        """
        found = []
        for queue in sorted(self.queues.values(), key=lambda q: q["queue_id"]):
            views = [self._with_sla(t) for t in self.tickets.values()
                     if t["queue_id"] == queue["queue_id"] and t["status"] in OPEN_STATUSES]
            row: Dict[str, Any] = dict(queue)
            row["open_tickets"] = len(views)
            row["overdue_tickets"] = sum(1 for v in views if v["overdue"])
            found.append(row)
        return {"success": True, "data": found}

    # ----- ticket changes ------------------------------------------------------------------------

    def create_ticket(self, requester_id: str, title: str, description: str,
                      category: Literal["hardware", "software", "email", "network", "access", "security"],
                      priority: Literal["P1", "P2", "P3", "P4"] = "P3", asset_id: Optional[str] = None) -> dict:
        """Open a new ticket for an employee; it is routed to the queue that handles its category.

        Args:
            requester_id: Employee id of the person who needs help.
            title: Short summary of the problem.
            description: Details of the problem.
            category: Problem category: hardware, software, email, network, access or security.
            priority: P1 (critical) to P4 (low); default P3.
            asset_id: The affected device, when there is one; it must be assigned to the requester.

        Returns:
            {"success": True, "message": str, "data": {"ticket_id", "queue_id", "due_date"}} or an error.

        Constraints:
            The requester must be an active employee (not terminated). Due date = today + SLA days of the priority.
        """
        emp = self.employees.get(requester_id)
        if emp is None:
            return {"success": False, "error": f"No employee with id '{requester_id}'."}
        if emp["status"] == "terminated":
            return {"success": False, "error": f"Employee {requester_id} is terminated and cannot raise tickets."}
        if priority not in self.sla_days:
            return {"success": False, "error": f"Unknown priority '{priority}'. Use one of {sorted(self.sla_days)}."}
        if not title.strip():
            return {"success": False, "error": "A ticket needs a non-empty title."}
        queue_id = self._queue_for_category(category)
        if queue_id is None:
            return {"success": False, "error": f"No queue handles category '{category}'."}
        if asset_id is not None:
            asset = self.assets.get(asset_id)
            if asset is None:
                return {"success": False, "error": f"No asset with id '{asset_id}'."}
            if asset["assigned_to"] != requester_id:
                return {"success": False, "error": f"Asset {asset_id} is not assigned to {requester_id}."}
        ticket_id = self._next_id(self.tickets, "INC-", 4)
        due = self._add_days(self.today, self.sla_days[priority])
        self.tickets[ticket_id] = {
            "ticket_id": ticket_id, "title": title.strip(), "description": description, "category": category,
            "priority": priority, "status": "new", "requester_id": requester_id, "asset_id": asset_id,
            "queue_id": queue_id, "assignee_id": None, "created_date": self.today, "due_date": due,
            "resolved_date": None, "resolution": None, "reopen_count": 0,
        }
        return {"success": True, "message": f"Ticket {ticket_id} created in {queue_id}, due {due}.",
                "data": {"ticket_id": ticket_id, "queue_id": queue_id, "due_date": due}}

    def assign_ticket(self, ticket_id: str, agent_id: str) -> dict:
        """Assign (or reassign) an open ticket to an agent of the ticket's queue.

        Args:
            ticket_id: The ticket id.
            agent_id: The agent who will work the ticket.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Ticket must be open. Agent must be active, work the ticket's queue and be below max_open_tickets.
            A new ticket becomes assigned; other open statuses are kept.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] not in OPEN_STATUSES:
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only open tickets can be assigned."}
        agent = self.agents.get(agent_id)
        if agent is None:
            return {"success": False, "error": f"No agent with id '{agent_id}'."}
        if not agent["active"]:
            return {"success": False, "error": f"Agent {agent_id} is inactive."}
        if ticket["queue_id"] not in agent["queue_ids"]:
            return {"success": False, "error": f"Agent {agent_id} does not work queue {ticket['queue_id']}."}
        if ticket["assignee_id"] == agent_id:
            return {"success": False, "error": f"Ticket {ticket_id} is already assigned to {agent_id}."}
        if self._open_count(agent_id) >= agent["max_open_tickets"]:
            return {"success": False, "error": f"Agent {agent_id} is at capacity ({agent['max_open_tickets']} open tickets)."}
        ticket["assignee_id"] = agent_id
        if ticket["status"] == "new":
            ticket["status"] = "assigned"
        return {"success": True, "message": f"Ticket {ticket_id} assigned to {agent_id}."}

    def update_ticket_status(self, ticket_id: str, status: Literal["in_progress", "on_hold"],
                             note: Optional[str] = None) -> dict:
        """Start work on a ticket, put it on hold, or resume it.

        Args:
            ticket_id: The ticket id.
            status: in_progress (start or resume work) or on_hold (waiting on the requester or a vendor).
            note: Reason for the change; required for on_hold. Stored as an internal note by the assignee.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Allowed moves: assigned -> in_progress, in_progress -> on_hold, on_hold -> in_progress.
            The ticket must have an assignee.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        allowed = {"in_progress": ("assigned", "on_hold"), "on_hold": ("in_progress",)}
        if status not in allowed:
            return {"success": False, "error": "status must be in_progress or on_hold; use resolve_ticket, close_ticket or cancel_ticket for the others."}
        if ticket["assignee_id"] is None:
            return {"success": False, "error": f"Ticket {ticket_id} has no assignee; assign it first."}
        if ticket["status"] not in allowed[status]:
            return {"success": False, "error": f"Cannot move ticket {ticket_id} from {ticket['status']} to {status}."}
        if status == "on_hold" and not (note and note.strip()):
            return {"success": False, "error": "Putting a ticket on hold needs a note saying what it waits for."}
        ticket["status"] = status
        if note and note.strip():
            self._comment(ticket_id, ticket["assignee_id"], note.strip(), True)
        return {"success": True, "message": f"Ticket {ticket_id} is now {status}."}

    def change_priority(self, ticket_id: str, priority: Literal["P1", "P2", "P3", "P4"], reason: str) -> dict:
        """Change an open ticket's priority; the SLA due date is recomputed from the creation date.

        Args:
            ticket_id: The ticket id.
            priority: The new priority, P1 (critical) to P4 (low).
            reason: Why the priority changes; stored as an internal note.

        Returns:
            {"success": True, "message": str, "data": {"due_date": str}} or {"success": False, "error": str}.

        Constraints:
            Only open tickets. A reason is required. New due date = created_date + SLA days of the new priority.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] not in OPEN_STATUSES:
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only open tickets can be re-prioritised."}
        if priority not in self.sla_days:
            return {"success": False, "error": f"Unknown priority '{priority}'."}
        if ticket["priority"] == priority:
            return {"success": False, "error": f"Ticket {ticket_id} already has priority {priority}."}
        if not reason.strip():
            return {"success": False, "error": "A priority change needs a reason."}
        old = ticket["priority"]
        ticket["priority"] = priority
        ticket["due_date"] = self._add_days(ticket["created_date"], self.sla_days[priority])
        self._comment(ticket_id, ticket["assignee_id"] or "system", f"Priority {old} -> {priority}: {reason.strip()}", True)
        return {"success": True, "message": f"Ticket {ticket_id} is now {priority}, due {ticket['due_date']}.",
                "data": {"due_date": ticket["due_date"]}}

    def transfer_ticket(self, ticket_id: str, queue_id: str, reason: str) -> dict:
        """Move an open ticket to another queue; it becomes new and unassigned there.

        Args:
            ticket_id: The ticket id.
            queue_id: The destination queue, e.g. "Q-NET".
            reason: Why it is transferred; stored as an internal note.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only open tickets; the destination must differ from the current queue.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] not in OPEN_STATUSES:
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only open tickets can be transferred."}
        if queue_id not in self.queues:
            return {"success": False, "error": f"No queue with id '{queue_id}'."}
        if ticket["queue_id"] == queue_id:
            return {"success": False, "error": f"Ticket {ticket_id} is already in {queue_id}."}
        self._comment(ticket_id, ticket["assignee_id"] or "system",
                      f"Transferred {ticket['queue_id']} -> {queue_id}: {reason.strip()}", True)
        ticket["queue_id"] = queue_id
        ticket["assignee_id"] = None
        ticket["status"] = "new"
        return {"success": True, "message": f"Ticket {ticket_id} moved to {queue_id} and awaits assignment."}

    def add_comment(self, ticket_id: str, author_id: str, body: str, internal: bool = False) -> dict:
        """Add a comment to a ticket, visible to the requester or as an internal agent note.

        Args:
            ticket_id: The ticket id.
            author_id: Employee id or agent id of the author.
            body: The comment text.
            internal: True for an agent-only note.

        Returns:
            {"success": True, "message": str, "data": {"comment_id": str}} or {"success": False, "error": str}.

        Constraints:
            Not on closed or cancelled tickets. Only agents may write internal notes.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] in ("closed", "cancelled"):
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; it takes no more comments."}
        if author_id not in self.agents and author_id not in self.employees:
            return {"success": False, "error": f"Unknown author '{author_id}'."}
        if internal and author_id not in self.agents:
            return {"success": False, "error": "Only agents can write internal notes."}
        if not body.strip():
            return {"success": False, "error": "A comment needs text."}
        comment_id = self._comment(ticket_id, author_id, body.strip(), internal)
        return {"success": True, "message": f"Comment {comment_id} added to {ticket_id}.", "data": {"comment_id": comment_id}}

    def resolve_ticket(self, ticket_id: str, resolution: str) -> dict:
        """Mark an assigned ticket resolved with a resolution note.

        Args:
            ticket_id: The ticket id.
            resolution: What was done to fix the problem.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Ticket must be assigned, in_progress or on_hold (so it has an assignee); resolution must not be empty.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] not in ("assigned", "in_progress", "on_hold"):
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only assigned or in-progress tickets can be resolved."}
        if not resolution.strip():
            return {"success": False, "error": "A resolution note is required."}
        ticket["status"] = "resolved"
        ticket["resolution"] = resolution.strip()
        ticket["resolved_date"] = self.today
        return {"success": True, "message": f"Ticket {ticket_id} resolved."}

    def reopen_ticket(self, ticket_id: str, reason: str) -> dict:
        """Reopen a resolved ticket when the problem came back (within 7 days of resolution).

        Args:
            ticket_id: The ticket id.
            reason: What is still wrong; stored as a comment.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only resolved (not closed) tickets, at most 7 days after resolved_date. The ticket returns to its
            assignee as assigned and gets a new due date of today + SLA days.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] != "resolved":
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only resolved tickets can be reopened."}
        resolved = ticket["resolved_date"] or self.today
        if self._add_days(resolved, REOPEN_WINDOW_DAYS) < self.today:
            return {"success": False, "error": f"Ticket {ticket_id} was resolved on {resolved}, more than {REOPEN_WINDOW_DAYS} days ago; open a new ticket instead."}
        if not reason.strip():
            return {"success": False, "error": "Reopening needs a reason."}
        ticket["status"] = "assigned" if ticket["assignee_id"] else "new"
        ticket["resolved_date"] = None
        ticket["resolution"] = None
        ticket["reopen_count"] += 1
        ticket["due_date"] = self._add_days(self.today, self.sla_days[ticket["priority"]])
        self._comment(ticket_id, ticket["requester_id"], f"Reopened: {reason.strip()}", False)
        return {"success": True, "message": f"Ticket {ticket_id} reopened, due {ticket['due_date']}."}

    def close_ticket(self, ticket_id: str) -> dict:
        """Close a resolved ticket for good (the requester confirmed the fix).

        Args:
            ticket_id: The ticket id.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only resolved tickets can be closed; closed tickets cannot be reopened or commented on.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] != "resolved":
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only resolved tickets can be closed."}
        ticket["status"] = "closed"
        return {"success": True, "message": f"Ticket {ticket_id} closed."}

    def cancel_ticket(self, ticket_id: str, reason: str) -> dict:
        """Cancel a ticket that is no longer needed, before work on it has started.

        Args:
            ticket_id: The ticket id.
            reason: Why it is cancelled; stored as a comment.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only new or assigned tickets; once work started (in_progress, on_hold) resolve it instead.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] not in ("new", "assigned"):
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}; only new or assigned tickets can be cancelled."}
        ticket["status"] = "cancelled"
        self._comment(ticket_id, ticket["assignee_id"] or "system", f"Cancelled: {reason.strip()}", False)
        return {"success": True, "message": f"Ticket {ticket_id} cancelled."}

    def bulk_reassign_tickets(self, from_agent_id: str, to_agent_id: str) -> dict:
        """Hand all open tickets of one agent to another (e.g. before leave); tickets that cannot move are reported.

        Args:
            from_agent_id: The agent whose open tickets are moved.
            to_agent_id: The agent who takes them over.

        Returns:
            {"success": True, "message": str, "data": {"moved": [ids], "skipped": [{"ticket_id", "reason"}]}}
            or {"success": False, "error": str}.

        Constraints:
            Same rules as assign_ticket per ticket: the target must be active, work the ticket's queue and
            stay within max_open_tickets. Fails if no ticket can be moved.
        """
        if from_agent_id not in self.agents:
            return {"success": False, "error": f"No agent with id '{from_agent_id}'."}
        target = self.agents.get(to_agent_id)
        if target is None:
            return {"success": False, "error": f"No agent with id '{to_agent_id}'."}
        if from_agent_id == to_agent_id:
            return {"success": False, "error": "Source and target agent are the same."}
        if not target["active"]:
            return {"success": False, "error": f"Agent {to_agent_id} is inactive."}
        open_ids = sorted(t["ticket_id"] for t in self.tickets.values()
                          if t["assignee_id"] == from_agent_id and t["status"] in OPEN_STATUSES)
        if not open_ids:
            return {"success": False, "error": f"Agent {from_agent_id} has no open tickets."}
        moved: List[str] = []
        skipped: List[Dict[str, str]] = []
        for ticket_id in open_ids:
            ticket = self.tickets[ticket_id]
            if ticket["queue_id"] not in target["queue_ids"]:
                skipped.append({"ticket_id": ticket_id, "reason": f"{to_agent_id} does not work {ticket['queue_id']}"})
            elif self._open_count(to_agent_id) >= target["max_open_tickets"]:
                skipped.append({"ticket_id": ticket_id, "reason": f"{to_agent_id} is at capacity"})
            else:
                ticket["assignee_id"] = to_agent_id
                moved.append(ticket_id)
        if not moved:
            return {"success": False, "error": f"None of {from_agent_id}'s tickets could move to {to_agent_id}: {skipped}"}
        return {"success": True, "message": f"Moved {len(moved)} ticket(s) to {to_agent_id}; skipped {len(skipped)}.",
                "data": {"moved": moved, "skipped": skipped}}

    # ----- asset changes -------------------------------------------------------------------------

    def assign_asset(self, asset_id: str, employee_id: str) -> dict:
        """Issue an in-stock asset to an employee.

        Args:
            asset_id: The asset id.
            employee_id: The employee who receives it.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Asset must be in_stock; employee must be active. An employee holds at most one device of each
            type, except monitors (at most two).
        """
        asset = self.assets.get(asset_id)
        if asset is None:
            return {"success": False, "error": f"No asset with id '{asset_id}'."}
        emp = self.employees.get(employee_id)
        if emp is None:
            return {"success": False, "error": f"No employee with id '{employee_id}'."}
        if emp["status"] != "active":
            return {"success": False, "error": f"Employee {employee_id} is {emp['status']}; devices go to active employees only."}
        if asset["status"] != "in_stock":
            return {"success": False, "error": f"Asset {asset_id} is {asset['status']}; only in-stock assets can be issued."}
        held = sum(1 for a in self.assets.values()
                   if a["assigned_to"] == employee_id and a["asset_type"] == asset["asset_type"])
        limit = 2 if asset["asset_type"] == "monitor" else 1
        if held >= limit:
            return {"success": False, "error": f"Employee {employee_id} already holds {held} {asset['asset_type']}(s); return one first."}
        asset["status"] = "in_use"
        asset["assigned_to"] = employee_id
        return {"success": True, "message": f"Asset {asset_id} issued to {employee_id}."}

    def return_asset(self, asset_id: str, condition: Literal["good", "damaged"]) -> dict:
        """Take an asset back from its holder; good devices go to stock, damaged ones to repair.

        Args:
            asset_id: The asset id.
            condition: good (back to stock) or damaged (sent to repair).

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only in_use assets can be returned.
        """
        asset = self.assets.get(asset_id)
        if asset is None:
            return {"success": False, "error": f"No asset with id '{asset_id}'."}
        if asset["status"] != "in_use":
            return {"success": False, "error": f"Asset {asset_id} is {asset['status']}, not in use."}
        if condition not in ("good", "damaged"):
            return {"success": False, "error": "condition must be good or damaged."}
        holder = asset["assigned_to"]
        asset["assigned_to"] = None
        asset["status"] = "in_stock" if condition == "good" else "in_repair"
        return {"success": True, "message": f"Asset {asset_id} returned by {holder}; now {asset['status']}."}

    def complete_repair(self, asset_id: str) -> dict:
        """Put a repaired asset back into stock.

        Args:
            asset_id: The asset id.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only in_repair assets.
        """
        asset = self.assets.get(asset_id)
        if asset is None:
            return {"success": False, "error": f"No asset with id '{asset_id}'."}
        if asset["status"] != "in_repair":
            return {"success": False, "error": f"Asset {asset_id} is {asset['status']}, not in repair."}
        asset["status"] = "in_stock"
        return {"success": True, "message": f"Asset {asset_id} is back in stock."}

    def retire_asset(self, asset_id: str) -> dict:
        """Retire an asset permanently (disposal).

        Args:
            asset_id: The asset id.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            The asset must not be in use (return it first) and no open ticket may reference it.
        """
        asset = self.assets.get(asset_id)
        if asset is None:
            return {"success": False, "error": f"No asset with id '{asset_id}'."}
        if asset["status"] == "retired":
            return {"success": False, "error": f"Asset {asset_id} is already retired."}
        if asset["status"] == "in_use":
            return {"success": False, "error": f"Asset {asset_id} is in use by {asset['assigned_to']}; return it first."}
        blocking = sorted(t["ticket_id"] for t in self.tickets.values()
                          if t["asset_id"] == asset_id and t["status"] in OPEN_STATUSES)
        if blocking:
            return {"success": False, "error": f"Asset {asset_id} has open tickets {blocking}; resolve them first."}
        asset["status"] = "retired"
        return {"success": True, "message": f"Asset {asset_id} retired."}
