"""Write environments/it_helpdesk/default_state.json: a fictional company's help desk on 2026-03-16.

Deterministic (seeded). A handful of records are placed by hand because the bundled scenarios rely on
them (see make_scenarios.py); the rest is seeded filler. Run: python environments/it_helpdesk/make_state.py
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

TODAY = date(2026, 3, 16)
SLA = {"P1": 1, "P2": 3, "P3": 5, "P4": 10}
DOMAIN = "brightwater.example"
OPEN = ("new", "assigned", "in_progress", "on_hold")

EMPLOYEES = [  # name, department, title, location, status
    ("Priya Raman", "Finance", "Financial Analyst", "Lyon", "active"),
    ("Tomasz Wojcik", "Engineering", "Backend Engineer", "Remote", "active"),
    ("Aisha Mensah", "Marketing", "Brand Manager", "Denver", "active"),
    ("Marcus Bell", "Sales", "Account Executive", "Denver", "active"),
    ("Elena Petrova", "Engineering", "QA Lead", "Lyon", "active"),
    ("Daniel Kim", "Operations", "Logistics Coordinator", "Denver", "active"),
    ("Sofia Martins", "HR", "HR Business Partner", "Lyon", "active"),
    ("Oliver Grant", "Finance", "Payroll Specialist", "Denver", "active"),
    ("Nadia Haddad", "Legal", "Legal Counsel", "Lyon", "active"),
    ("Lucas Moreau", "Sales", "Sales Manager", "Lyon", "active"),
    ("Grace Liu", "Engineering", "Frontend Engineer", "Remote", "active"),
    ("Ben Adeyemi", "Support", "Customer Support Rep", "Denver", "active"),
    ("Chloe Dubois", "Marketing", "Content Strategist", "Lyon", "active"),
    ("Ethan Brooks", "Engineering", "Site Reliability Engineer", "Denver", "active"),
    ("Fatima Zahra", "Finance", "Controller", "Lyon", "active"),
    ("George Papadakis", "Operations", "Facilities Manager", "Denver", "active"),
    ("Hana Sato", "Support", "Support Team Lead", "Remote", "active"),
    ("Ivan Horvat", "Engineering", "Data Engineer", "Lyon", "on_leave"),
    ("Julia Novak", "HR", "Recruiter", "Denver", "active"),
    ("Kofi Boateng", "Sales", "Sales Development Rep", "Denver", "active"),
    ("Laura Rossi", "Legal", "Paralegal", "Lyon", "active"),
    ("Mateo Silva", "Engineering", "Mobile Engineer", "Remote", "active"),
    ("Nina Berg", "Marketing", "Marketing Analyst", "Denver", "active"),
    ("Omar Farouk", "Finance", "Accounts Payable Clerk", "Denver", "active"),
    ("Paula Jensen", "Operations", "Procurement Officer", "Lyon", "active"),
    ("Quentin Laurent", "Support", "Customer Support Rep", "Lyon", "active"),
    ("Rosa Alvarez", "Sales", "Account Executive", "Remote", "active"),
    ("Samir Nair", "Engineering", "Engineering Manager", "Denver", "active"),
    ("Kevin Lindqvist", "Sales", "Account Executive", "Denver", "terminated"),
    ("Wendy Clarke", "Marketing", "Events Coordinator", "Lyon", "terminated"),
]

QUEUES = [
    ("Q-HW", "Hardware & Devices", ["hardware"]),
    ("Q-SW", "Software & Email", ["software", "email"]),
    ("Q-NET", "Network & VPN", ["network"]),
    ("Q-ACC", "Access & Accounts", ["access"]),
    ("Q-SEC", "Security", ["security"]),
]

AGENTS = [  # id, name, queues, max open, active
    ("AG01", "Dana Okafor", ["Q-HW", "Q-NET"], 6, True),
    ("AG02", "Ravi Shankar", ["Q-HW"], 8, True),
    ("AG03", "Mei Lin Tan", ["Q-SW"], 5, True),
    ("AG04", "Jonas Weber", ["Q-SW", "Q-ACC"], 6, True),
    ("AG05", "Lucia Fernandez", ["Q-ACC", "Q-SEC"], 6, True),
    ("AG06", "Samuel Osei", ["Q-NET", "Q-HW"], 7, True),
    ("AG07", "Hannah Kowalski", ["Q-SW"], 6, False),
    ("AG08", "Tariq Aziz", ["Q-SEC", "Q-NET"], 5, True),
]

PROBLEMS = {
    "hardware": [("Laptop battery drains in under an hour", "Battery goes from full to 10% within an hour of light use."),
                 ("Docking station not detecting monitors", "Both external monitors stay black when docked."),
                 ("Keyboard keys sticking", "Several keys (E, R, space) stick and repeat."),
                 ("Laptop overheating and loud fan", "Fan runs at full speed and the laptop gets very hot during calls."),
                 ("Webcam not detected", "The built-in camera is not listed in the video-call app."),
                 ("Monitor flickering", "External monitor flickers every few seconds.")],
    "software": [("Excel crashes on large workbook", "Excel closes without error when opening the quarterly model."),
                 ("Cannot install approved design tool", "Software centre shows 'installation failed' for the design tool."),
                 ("ERP client licence error", "ERP client says the licence has expired at start-up."),
                 ("PDF editor keeps asking to sign in", "The PDF editor asks for sign-in on every launch.")],
    "email": [("Shared mailbox not visible", "The team shared mailbox disappeared from Outlook."),
              ("Emails to partner bouncing", "Messages to an external partner domain bounce back."),
              ("Calendar invites arrive twice", "Every meeting invite shows up twice in the calendar.")],
    "network": [("Wi-Fi drops in meeting rooms", "Wi-Fi disconnects in the 2nd floor meeting rooms."),
                ("Cannot reach internal wiki from home", "The wiki times out when working remotely."),
                ("Slow network drive", "Opening files on the shared drive takes minutes.")],
    "access": [("Need access to shared drive", "Please grant access to the department shared drive."),
               ("Account locked after password reset", "Account locked right after changing the password."),
               ("Lost MFA device", "Phone with the authenticator app was replaced; need MFA re-enrolled.")],
    "security": [("Suspicious phishing email", "Received an email asking to confirm payroll details via a link."),
                 ("USB device blocked", "Company-issued USB drive is blocked by endpoint policy.")],
}

CATEGORY_QUEUE = {cat: qid for qid, _, cats in QUEUES for cat in cats}


def day(offset: int) -> str:
    """TODAY minus `offset` days, ISO format."""
    return (TODAY - timedelta(days=offset)).isoformat()


def build() -> dict:
    """Build the whole state."""
    rng = random.Random(20260316)
    employees = {}
    for n, (name, dept, title, loc, status) in enumerate(EMPLOYEES, start=1001):
        eid = f"E{n}"
        email = name.lower().replace(" ", ".") + "@" + DOMAIN
        employees[eid] = {"employee_id": eid, "name": name, "email": email, "department": dept,
                          "title": title, "location": loc, "status": status}

    assets: dict = {}

    def add_asset(kind: str, model: str, status: str, holder: str | None, bought: int) -> str:
        aid = f"AST-{2001 + len(assets)}"
        purchase = date(2022, 1, 10) + timedelta(days=bought)
        assets[aid] = {"asset_id": aid, "asset_type": kind, "model": model,
                       "serial_number": f"{kind[:2].upper()}{rng.randrange(10**7, 10**8)}",
                       "status": status, "assigned_to": holder, "purchase_date": purchase.isoformat(),
                       "warranty_end": (purchase + timedelta(days=3 * 365)).isoformat()}
        return aid

    laptops = ["ThinkPad T14 Gen 3", "ThinkPad T14 Gen 4", "Latitude 7440", "MacBook Pro 14"]
    for eid, emp in employees.items():
        if emp["employee_id"] == "E1030":
            continue  # Wendy Clarke's devices were collected at offboarding
        add_asset("laptop", rng.choice(laptops), "in_use", eid, rng.randrange(0, 1300))
    for eid in ("E1003", "E1005", "E1008", "E1011", "E1014", "E1015", "E1022", "E1028"):
        add_asset("monitor", "Dell U2723QE", "in_use", eid, rng.randrange(200, 1300))
    for eid in ("E1005", "E1014", "E1028"):
        add_asset("monitor", "Dell U2723QE", "in_use", eid, rng.randrange(200, 1300))
    for eid in ("E1004", "E1010", "E1012", "E1017", "E1020", "E1027", "E1029"):
        add_asset("phone", rng.choice(["iPhone 14", "Pixel 8"]), "in_use", eid, rng.randrange(300, 1300))
    add_asset("desktop", "OptiPlex 7010", "in_use", "E1016", 150)
    add_asset("tablet", "iPad Air", "in_use", "E1013", 900)
    for _ in range(4):
        add_asset("laptop", rng.choice(laptops), "in_stock", None, rng.randrange(900, 1400))
    add_asset("laptop", "ThinkPad T14 Gen 3", "in_repair", None, 400)
    add_asset("laptop", "Latitude 5420", "retired", None, 10)
    add_asset("laptop", "Latitude 5420", "retired", None, 20)
    for _ in range(3):
        add_asset("monitor", "Dell P2422H", "in_stock", None, rng.randrange(600, 1300))
    add_asset("phone", "Pixel 8", "in_stock", None, 1200)
    add_asset("phone", "iPhone 13", "in_stock", None, 800)
    add_asset("desktop", "OptiPlex 5080", "in_repair", None, 60)
    add_asset("tablet", "iPad 9th gen", "in_stock", None, 700)

    tickets: dict = {}
    comments: dict = {}

    def add_comment(tid: str, author: str, body: str, internal: bool, when: str) -> None:
        cid = f"CMT-{len(comments) + 1:04d}"
        comments[cid] = {"comment_id": cid, "ticket_id": tid, "author_id": author, "body": body,
                         "internal": internal, "created_date": when}

    def holder_asset(eid: str, kind: str) -> str | None:
        return next((a for a, v in assets.items() if v["assigned_to"] == eid and v["asset_type"] == kind), None)

    def add_ticket(cat: str, prio: str, status: str, req: str, agent: str | None, age: int,
                   resolved_age: int | None = None, problem: tuple[str, str] | None = None,
                   asset: str | None = None) -> str:
        tid = f"INC-{3001 + len(tickets)}"
        title, desc = problem or rng.choice(PROBLEMS[cat])
        if asset is None and cat == "hardware":
            asset = holder_asset(req, "laptop")
        created = day(age)
        resolved = day(resolved_age) if resolved_age is not None else None
        resolution = None
        if status in ("resolved", "closed"):
            resolution = rng.choice(["Replaced faulty component and tested with the user.",
                                     "Reinstalled the application and cleared the profile cache.",
                                     "Updated drivers and firmware; user confirmed it works.",
                                     "Adjusted the configuration and verified with the user."])
        tickets[tid] = {"ticket_id": tid, "title": title, "description": desc, "category": cat, "priority": prio,
                        "status": status, "requester_id": req, "asset_id": asset,
                        "queue_id": CATEGORY_QUEUE[cat], "assignee_id": agent, "created_date": created,
                        "due_date": (date.fromisoformat(created) + timedelta(days=SLA[prio])).isoformat(),
                        "resolved_date": resolved, "resolution": resolution, "reopen_count": 0}
        if status != "new":
            add_comment(tid, req, "Thanks - let me know if you need anything from me.", False, created)
        if status in ("in_progress", "on_hold", "resolved", "closed") and agent:
            add_comment(tid, agent, "Investigating; collected logs from the device.", True, created)
        if status == "on_hold" and agent:
            add_comment(tid, agent, "Waiting for the requester to be available for a remote session.", True, day(max(age - 1, 0)))
        if status == "cancelled":
            add_comment(tid, agent or "system", "Cancelled: no longer needed.", False, created)
        return tid

    # Seeded history: closed, resolved (older than the reopen window) and cancelled tickets.
    active = [e for e, v in employees.items() if v["status"] != "terminated"]
    for _ in range(18):
        cat = rng.choice(list(PROBLEMS))
        agent = rng.choice([a for a, _, qs, _, on in AGENTS if CATEGORY_QUEUE[cat] in qs and on])
        age = rng.randrange(20, 45)
        add_ticket(cat, rng.choice(["P2", "P3", "P3", "P4"]), "closed", rng.choice(active), agent, age,
                   resolved_age=age - rng.randrange(1, 4))
    add_ticket("email", "P3", "cancelled", "E1019", None, 17)
    add_ticket("access", "P4", "cancelled", "E1024", "AG05", 25)

    # Hand-placed tickets the scenarios use (INC-3021 onwards).
    add_ticket("hardware", "P3", "in_progress", "E1015", "AG02", 4,
               problem=("Docking station not detecting monitors", "Both external monitors stay black when docked."))  # 3021
    add_ticket("network", "P2", "resolved", "E1006", "AG06", 9, resolved_age=3,
               problem=("VPN disconnects every few minutes", "VPN drops every 5-10 minutes when working from the warehouse."))  # 3022
    add_ticket("hardware", "P3", "resolved", "E1006", "AG02", 20, resolved_age=12,
               problem=("Warehouse label printer jams", "The label printer in the warehouse office jams on every batch."))  # 3023
    add_ticket("software", "P3", "new", "E1008", None, 1,
               problem=("Payroll application not loading", "The payroll app shows a blank screen after login; March payroll run is due."))  # 3024
    add_ticket("access", "P4", "assigned", "E1004", "AG04", 2,
               problem=("Need access to CRM reporting", "Please grant read access to the CRM reporting workspace."))  # 3025
    add_ticket("software", "P3", "in_progress", "E1004", "AG03", 3,
               problem=("CRM add-in missing in Outlook", "The CRM add-in disappeared from the Outlook ribbon."))  # 3026
    add_ticket("hardware", "P2", "assigned", "E1029", "AG02", 5,
               problem=("Laptop overheating and loud fan", "Fan runs at full speed and the laptop gets very hot during calls."))  # 3027
    add_ticket("hardware", "P3", "new", "E1002", None, 0,
               problem=("Laptop battery drains in under an hour", "Battery goes from full to 10% within an hour of light use."))  # 3028
    add_ticket("hardware", "P3", "assigned", "E1009", "AG01", 2)  # 3029 (AG01's open tickets)
    add_ticket("network", "P2", "in_progress", "E1021", "AG01", 3,
               problem=("Cannot reach internal wiki from home", "The wiki times out when working remotely."))  # 3030
    add_ticket("hardware", "P4", "on_hold", "E1025", "AG01", 6)  # 3031
    add_ticket("network", "P3", "assigned", "E1013", "AG01", 1,
               problem=("Wi-Fi drops in meeting rooms", "Wi-Fi disconnects in the 2nd floor meeting rooms."))  # 3032
    add_ticket("hardware", "P3", "assigned", "E1018", "AG06", 4)  # 3033
    for req, age in (("E1001", 2), ("E1011", 4), ("E1023", 5), ("E1026", 1)):
        add_ticket("software", rng.choice(["P2", "P3"]), rng.choice(["in_progress", "assigned"]), req, "AG03", age)
    add_ticket("email", "P3", "on_hold", "E1012", "AG04", 6)
    add_ticket("access", "P3", "in_progress", "E1007", "AG04", 1)

    # Seeded open filler for the other agents, then recent resolved tickets still inside the reopen window.
    fillers = [("security", "AG08"), ("security", "AG05"), ("access", "AG05"), ("network", "AG08"),
               ("hardware", "AG02"), ("network", "AG06"), ("email", None), ("access", None), ("security", None)]
    for cat, agent in fillers:
        status = "new" if agent is None else rng.choice(["assigned", "in_progress", "in_progress", "on_hold"])
        add_ticket(cat, rng.choice(["P1", "P2", "P3", "P4"]) if agent else "P3", status,
                   rng.choice(active), agent, rng.randrange(0, 8))
    for cat, agent in (("software", "AG04"), ("hardware", "AG06"), ("access", "AG05")):
        add_ticket(cat, "P3", "resolved", rng.choice(active), agent, 8, resolved_age=rng.randrange(1, 6))

    loads: dict = {}
    for t in tickets.values():
        if t["status"] in OPEN and t["assignee_id"]:
            loads[t["assignee_id"]] = loads.get(t["assignee_id"], 0) + 1
    for aid, _, _queues, cap, on in AGENTS:
        assert loads.get(aid, 0) <= cap, (aid, loads.get(aid), cap)
        assert on or not loads.get(aid), aid
    assert loads["AG03"] == 5 and loads["AG01"] == 4 and loads["AG04"] <= 4

    agents = {aid: {"agent_id": aid, "name": name, "email": name.lower().replace(" ", ".") + "@it." + DOMAIN,
                    "queue_ids": qs, "max_open_tickets": cap, "active": on} for aid, name, qs, cap, on in AGENTS}
    queues = {qid: {"queue_id": qid, "name": name, "categories": cats} for qid, name, cats in QUEUES}
    return {"employees": employees, "assets": assets, "queues": queues, "agents": agents, "tickets": tickets,
            "comments": comments, "sla_days": SLA, "today": TODAY.isoformat()}


if __name__ == "__main__":
    out = Path(__file__).with_name("default_state.json")
    state = build()
    out.write_text(json.dumps(state, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: " + ", ".join(f"{k}={len(v)}" for k, v in state.items() if isinstance(v, dict)))
