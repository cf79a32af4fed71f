"""Write environments/cloud_storage/default_state.json: a design studio's shared drive on 2026-05-20.

Deterministic (seeded). The users the scenarios rely on (U01-U09) get hand-placed folders and files;
everyone else gets seeded filler. Run: python environments/cloud_storage/make_state.py
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

TODAY = date(2026, 5, 20)
PLANS = {"free": 5_000_000, "standard": 100_000_000, "business": 1_000_000_000}
MIME = {"pdf": "application/pdf", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "txt": "text/plain",
        "jpg": "image/jpeg", "png": "image/png", "mp4": "video/mp4", "psd": "image/vnd.adobe.photoshop",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation", "zip": "application/zip"}
SIZE = {"pdf": (150, 6000), "docx": (20, 400), "xlsx": (30, 2500), "txt": (1, 40), "jpg": (1800, 9000),
        "png": (200, 4000), "mp4": (80_000, 900_000), "psd": (40_000, 380_000), "pptx": (800, 25_000),
        "zip": (5_000, 250_000)}

USERS = [  # id, name, org, plan
    ("U01", "Maya Chen", "lumen.example", "business"),
    ("U02", "Leo Fischer", "lumen.example", "standard"),
    ("U03", "Sara Lindgren", "lumen.example", "free"),
    ("U04", "Omar Haddad", "lumen.example", "business"),
    ("U05", "Carlos Ruiz", "lumen.example", "standard"),
    ("U06", "Dana Whitfield", "lumen.example", "standard"),
    ("U07", "Ines Carvalho", "lumen.example", "standard"),
    ("U08", "Ben Okoro", "lumen.example", "standard"),
    ("U09", "Priya Nair", "lumen.example", "business"),
    ("U10", "Tom Becker", "lumen.example", "standard"),
    ("U11", "Aiko Tanaka", "lumen.example", "standard"),
    ("U12", "Felix Wagner", "lumen.example", "free"),
    ("U13", "Nora Quinn", "lumen.example", "standard"),
    ("U14", "Hugo Martin", "lumen.example", "business"),
    ("U15", "Jordan Reyes", "northpeak.example", "business"),
    ("U16", "Alicia Park", "northpeak.example", "standard"),
    ("U17", "Sam Doyle", "northpeak.example", "standard"),
    ("U18", "Kim Larsen", "mailbox.example", "free"),
    ("U19", "Rafael Costa", "mailbox.example", "free"),
    ("U20", "Eva Novak", "lumen.example", "standard"),
    ("U21", "Marco Bianchi", "lumen.example", "free"),
    ("U22", "Zoe Adams", "mailbox.example", "standard"),
]


class Builder:
    """Accumulates users, folders, files and shares with sequential ids."""

    def __init__(self) -> None:
        self.rng = random.Random(20260520)
        self.users: dict = {}
        self.folders: dict = {}
        self.files: dict = {}
        self.shares: dict = {}

    def day(self, ago: int) -> str:
        return (TODAY - timedelta(days=ago)).isoformat()

    def user(self, uid: str, name: str, org: str, plan: str) -> str:
        root = self.folder(uid, None, "My Drive", 400)
        self.users[uid] = {"user_id": uid, "name": name, "email": name.lower().replace(" ", ".") + "@" + org,
                           "org": org, "plan": plan, "root_folder_id": root}
        return root

    def folder(self, owner: str, parent: str | None, name: str, ago: int) -> str:
        fid = f"FLD-{len(self.folders) + 1:03d}"
        self.folders[fid] = {"folder_id": fid, "name": name, "parent_id": parent, "owner_id": owner,
                             "created_date": self.day(ago), "trashed": False, "trashed_date": None, "trashed_via": None}
        return fid

    def file(self, owner: str, folder: str, name: str, size: int | None = None, ago: int | None = None,
             versions: list[int] | None = None) -> str:
        ext = name.rsplit(".", 1)[-1]
        lo, hi = SIZE[ext]
        created = ago if ago is not None else self.rng.randrange(20, 380)
        sizes = versions or [size or self.rng.randrange(lo, hi)]
        step = max(created // len(sizes), 1)
        hist = [{"version_number": n + 1, "size_kb": s, "created_date": self.day(created - n * step), "author_id": owner}
                for n, s in enumerate(sizes)]
        fid = f"FIL-{len(self.files) + 1:04d}"
        self.files[fid] = {"file_id": fid, "name": name, "folder_id": folder, "owner_id": owner, "mime_type": MIME[ext],
                           "size_kb": sizes[-1], "created_date": self.day(created),
                           "modified_date": hist[-1]["created_date"], "trashed": False, "trashed_date": None,
                           "trashed_via": None, "versions": hist}
        return fid

    def trash(self, item: str, ago: int) -> None:
        todo = [item]
        while todo:
            cur = todo.pop()
            rec = self.folders.get(cur) or self.files[cur]
            if not rec["trashed"]:
                rec.update(trashed=True, trashed_date=self.day(ago), trashed_via=item)
            todo += [k for k, v in self.folders.items() if v["parent_id"] == cur]
            todo += [k for k, v in self.files.items() if v["folder_id"] == cur]

    def share(self, item: str, user: str, role: str, by: str, ago: int) -> None:
        sid = f"SH-{len(self.shares) + 1:04d}"
        self.shares[sid] = {"share_id": sid, "item_id": item, "user_id": user, "role": role, "granted_by": by,
                            "created_date": self.day(ago)}


def build() -> dict:
    """Build the whole state."""
    b = Builder()
    roots = {uid: b.user(uid, name, org, plan) for uid, name, org, plan in USERS}

    # U01 Maya Chen, creative director: client work, campaign assets, the team folder.
    clients = b.folder("U01", roots["U01"], "Clients", 300)
    rebrand = b.folder("U01", clients, "Northpeak Rebrand", 120)
    for name in ("brand-guidelines-v3.pdf", "logo-concepts.psd", "moodboard.jpg", "workshop-notes.docx"):
        b.file("U01", rebrand, name)
    b.share(rebrand, "U15", "commenter", "U01", 110)
    b.share(rebrand, "U06", "editor", "U01", 110)
    campaign = b.folder("U01", roots["U01"], "Campaign Assets", 60)
    for name in ("hero-banner.psd", "spring-teaser.mp4", "copy-deck.pptx", "social-cutdowns.zip"):
        b.file("U01", campaign, name)
    b.file("U01", roots["U01"], "Q3 budget.xlsx", versions=[480, 512])
    b.file("U01", roots["U01"], "team-offsite-agenda.docx")
    team = b.folder("U01", roots["U01"], "Team Shared", 200)
    for uid in ("U08", "U07", "U10", "U11"):
        b.share(team, uid, "editor", "U01", 190)
    b.file("U01", team, "meeting-notes-old.txt", ago=150)
    b.file("U01", team, "studio-handbook.pdf")

    # U02 Leo Fischer: contracts folder trashed yesterday, an older draft trashed on its own before.
    contracts = b.folder("U02", roots["U02"], "Contracts 2025", 200)
    draft = b.file("U02", contracts, "old draft.docx", ago=190)
    for name in ("Northpeak MSA.pdf", "Northpeak SOW-2.pdf", "Freelancer NDA - A. Park.pdf", "Rate card 2025.xlsx"):
        b.file("U02", contracts, name)
    b.trash(draft, 5)
    b.trash(contracts, 1)
    b.folder("U02", roots["U02"], "Invoices", 250)

    # U03 Sara Lindgren, free plan, nearly full; two big videos in her trash.
    videos = b.folder("U03", roots["U03"], "Videos", 300)
    for name, size in (("studio-tour.mp4", 1_450_000), ("interview-raw.mp4", 1_380_000), ("b-roll-city.mp4", 1_105_000)):
        b.file("U03", videos, name, size=size)
    photos = b.folder("U03", roots["U03"], "Photos", 300)
    for n in range(1, 7):
        b.file("U03", photos, f"shoot-{n:02d}.jpg", size=8_000 + n * 500)
    t1 = b.file("U03", videos, "interview-take1.mp4", size=410_000)
    t2 = b.file("U03", videos, "interview-take2.mp4", size=395_000)
    b.trash(t1, 12)
    b.trash(t2, 9)
    b.file("U03", roots["U03"], "notes.txt", size=12)

    # U04 Omar Haddad: pricing.xlsx with a broken latest version.
    sales = b.folder("U04", roots["U04"], "Sales", 280)
    b.file("U04", sales, "pricing.xlsx", ago=90, versions=[310, 342, 355, 18])
    b.file("U04", sales, "pipeline.xlsx")
    b.file("U04", sales, "proposal-template.docx")
    b.share(sales, "U09", "viewer", "U04", 80)

    # U05 Carlos Ruiz (leaving): Client Projects with an external share.
    cproj = b.folder("U05", roots["U05"], "Client Projects", 330)
    for sub, files in (("Harbor Cafe", ("menu-redesign.psd", "signage.pdf")),
                       ("Northpeak App", ("wireframes.pdf", "icon-set.zip", "usability-report.docx"))):
        sf = b.folder("U05", cproj, sub, 200)
        for name in files:
            b.file("U05", sf, name)
    b.file("U05", cproj, "project-tracker.xlsx")
    b.share(cproj, "U16", "viewer", "U05", 60)
    b.share(cproj, "U13", "editor", "U05", 100)
    b.file("U05", roots["U05"], "expenses-may.xlsx")

    # U06 Dana Whitfield: a recently trashed file to restore.
    docs = b.folder("U06", roots["U06"], "Documents", 300)
    b.file("U06", docs, "client-feedback-round2.docx")
    lost = b.file("U06", docs, "press-kit.pdf")
    b.trash(lost, 3)
    b.file("U06", docs, "press-kit-2024.pdf")

    # U07 Ines Carvalho: quarterly reports to archive.
    reports = b.folder("U07", roots["U07"], "Reports", 380)
    for q in ("Q1", "Q2", "Q3", "Q4"):
        b.file("U07", reports, f"{q} 2025 report.pdf")
    b.file("U07", reports, "Q1 2026 report.pdf")
    b.file("U07", team, "style-audit.pdf")

    # U08 Ben Okoro: his files sitting in Maya's team folder.
    b.folder("U08", roots["U08"], "Personal", 150)
    b.file("U08", team, "ben-timesheet-april.xlsx")
    b.file("U08", team, "ben-travel-receipts.pdf")

    # U09 Priya Nair on business: large video archive, some of it in the trash.
    archive = b.folder("U09", roots["U09"], "Video Archive", 390)
    for n in range(1, 13):
        b.file("U09", archive, f"event-recording-{n:02d}.mp4", size=8_200_000 + n * 13_000)
    old1 = b.file("U09", archive, "conference-2024-day1.mp4", size=9_400_000)
    old2 = b.file("U09", archive, "conference-2024-day2.mp4", size=9_100_000)
    b.trash(old1, 6)
    b.trash(old2, 6)
    drafts = b.folder("U09", roots["U09"], "Old drafts", 200)
    for name in ("talk-outline.docx", "speaker-bios.docx"):
        b.file("U09", drafts, name)
    b.trash(drafts, 4)

    # Everyone else: seeded filler.
    templates = {"Documents": ["cv.pdf", "notes.txt", "plan.docx", "ideas.docx", "budget.xlsx"],
                 "Photos": ["holiday.jpg", "portrait.jpg", "team-photo.jpg", "screenshot.png"],
                 "Projects": ["brief.pdf", "concepts.psd", "presentation.pptx", "assets.zip", "timeline.xlsx"]}
    for uid, *_ in USERS[9:]:
        for fname in b.rng.sample(sorted(templates), 2):
            fld = b.folder(uid, roots[uid], fname, b.rng.randrange(100, 380))
            for name in b.rng.sample(templates[fname], 3):
                b.file(uid, fld, name)
        if b.rng.random() < 0.4:
            extra = b.file(uid, roots[uid], "old-export.zip")
            b.trash(extra, b.rng.randrange(1, 25))
    lumen = [u for u, _, org, _ in USERS if org == "lumen.example"]
    for uid, _, org, _ in USERS[9:]:
        mine = sorted(k for k, v in b.folders.items() if v["owner_id"] == uid and v["parent_id"] and not v["trashed"])
        for target in b.rng.sample([u for u in lumen if u != uid], 2):
            internal = b.users[target]["org"] == org
            role = b.rng.choice(["viewer", "commenter", "editor"] if internal else ["viewer", "commenter"])
            b.share(b.rng.choice(mine), target, role, uid, b.rng.randrange(5, 200))
    b.share(roots["U10"], "U11", "viewer", "U10", 40)
    b.share(next(k for k, v in b.folders.items() if v["owner_id"] == "U15" and v["parent_id"]), "U01", "editor", "U15", 30)

    for uid, *_ in USERS:
        used = sum(f["size_kb"] for f in b.files.values() if f["owner_id"] == uid)
        assert used <= PLANS[b.users[uid]["plan"]], (uid, used)
    return {"plans": {p: {"plan_id": p, "name": p.title(), "quota_kb": q} for p, q in PLANS.items()},
            "users": b.users, "folders": b.folders, "files": b.files, "shares": b.shares,
            "trash_retention_days": 30, "today": TODAY.isoformat()}


if __name__ == "__main__":
    out = Path(__file__).with_name("default_state.json")
    state = build()
    out.write_text(json.dumps(state, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: " + ", ".join(f"{k}={len(v)}" for k, v in state.items() if isinstance(v, dict)))
