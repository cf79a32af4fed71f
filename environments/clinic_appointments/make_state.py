"""Write default_state.json for clinic_appointments: a fictional clinic, deterministic (seeded).

Run from the repository root: python environments/clinic_appointments/make_state.py
The history respects the environment's rules (no double booking, referrals for specialists,
pediatrics for children, at most three upcoming appointments per patient).
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
TODAY = date(2026, 4, 7)  # a Tuesday
TIMES = ["09:00", "09:30", "10:00", "10:30"]
WINDOW = (TODAY - timedelta(days=6), TODAY + timedelta(days=10))  # full schedules exist in this window

# id, name, specialty, requires_referral, accepts_new_patients, offers_video, weekdays worked (0 = Monday)
DOCTORS = [
    ("D01", "Dr. Alice Moreno", "general practice", False, True, True, (0, 1, 3)),
    ("D02", "Dr. Benjamin Osei", "general practice", False, False, True, (1, 2, 4)),
    ("D03", "Dr. Carla Jensen", "pediatrics", False, True, False, (0, 2, 4)),
    ("D04", "Dr. David Kaplan", "cardiology", True, True, True, (1, 3)),
    ("D05", "Dr. Emily Nakamura", "dermatology", False, True, True, (0, 1, 3)),
    ("D06", "Dr. Farid Rahman", "dermatology", False, False, False, (2, 4)),
    ("D07", "Dr. Gloria Santos", "orthopedics", True, True, False, (1, 4)),
    ("D08", "Dr. Henry Whitfield", "neurology", True, True, True, (0, 3)),
]
ADULTS = ["Margaret Ellison", "Victor Alvarez", "Simone Okoye", "Daniel Brooks", "Aisha Rahimi", "Peter Lindgren",
          "Rosa Delgado", "Kwame Asante", "Helen Marsh", "Ivan Sokolov", "Nora Fitzgerald", "Tariq Aziz",
          "Beatrice Wong", "George Papadakis", "Lena Hoffmann", "Carlos Mendes", "Fatima Zahra", "Oliver Grant",
          "Mei Lin", "Samuel Achebe", "Julia Kowalczyk", "Arjun Mehta", "Clara Dubois", "Hugo Lambert"]
CHILDREN = ["Ella Brooks", "Leo Delgado", "Amir Rahimi", "Sophie Marsh", "Noah Asante", "Ruby Lindgren"]
PLANS = ["BlueRiver PPO", "Meridian HMO", "CivicCare Basic", "Northstar Gold", None]
ALLERGY_SETS = [[], [], [], ["penicillins"], ["sulfonamides"], ["nsaids"], ["penicillins", "nsaids"], ["statins"],
                ["codeine"]]
# name, class, controlled, max refills
MEDICATIONS = [
    ("amoxicillin", "penicillins", False, 0), ("azithromycin", "macrolides", False, 0),
    ("cephalexin", "cephalosporins", False, 1), ("ibuprofen", "nsaids", False, 3), ("naproxen", "nsaids", False, 3),
    ("acetaminophen", "analgesics", False, 5), ("lisinopril", "ace inhibitors", False, 5),
    ("losartan", "arbs", False, 5), ("atorvastatin", "statins", False, 5), ("metformin", "biguanides", False, 5),
    ("sertraline", "ssris", False, 5), ("albuterol", "bronchodilators", False, 3),
    ("hydrocortisone cream", "topical steroids", False, 2), ("tretinoin cream", "retinoids", False, 3),
    ("sumatriptan", "triptans", False, 3), ("gabapentin", "anticonvulsants", False, 3),
    ("oxycodone", "opioids", True, 0), ("lorazepam", "benzodiazepines", True, 0),
    ("trimethoprim-sulfamethoxazole", "sulfonamides", False, 0), ("codeine", "opioids", True, 0),
]
# what each specialty prescribes
SPECIALTY_MEDS = {
    "general practice": ["amoxicillin", "azithromycin", "lisinopril", "atorvastatin", "metformin", "sertraline",
                         "albuterol", "ibuprofen", "acetaminophen", "trimethoprim-sulfamethoxazole"],
    "pediatrics": ["amoxicillin", "azithromycin", "cephalexin", "albuterol", "acetaminophen", "ibuprofen"],
    "cardiology": ["lisinopril", "losartan", "atorvastatin"],
    "dermatology": ["hydrocortisone cream", "tretinoin cream", "cephalexin"],
    "orthopedics": ["ibuprofen", "naproxen", "acetaminophen"],
    "neurology": ["sumatriptan", "gabapentin"],
}
REASONS = {
    "general practice": ["annual physical", "persistent cough", "blood pressure check", "fatigue", "follow-up labs"],
    "pediatrics": ["well-child visit", "ear pain", "vaccination", "fever", "asthma follow-up"],
    "cardiology": ["palpitations", "chest discomfort", "hypertension review", "post-ECG follow-up"],
    "dermatology": ["rash", "mole check", "eczema flare", "acne follow-up"],
    "orthopedics": ["knee pain", "shoulder injury", "lower back pain", "ankle sprain follow-up"],
    "neurology": ["migraines", "numbness in hands", "dizziness", "sleep disturbance"],
}


def slot_id(doctor_id: str, day: date, time: str) -> str:
    """Readable slot id: <doctor>-<date>-<HHMM>."""
    return f"{doctor_id}-{day.isoformat()}-{time.replace(':', '')}"


class Builder:
    """Accumulates a consistent clinic history."""

    def __init__(self) -> None:
        self.rng = random.Random(20260407)
        self.doctors = {d[0]: {"doctor_id": d[0], "name": d[1], "specialty": d[2], "requires_referral": d[3],
                               "accepts_new_patients": d[4], "offers_video": d[5]} for d in DOCTORS}
        self.workdays = {d[0]: d[6] for d in DOCTORS}
        self.patients: dict = {}
        self.slots: dict = {}
        self.appointments: dict = {}
        self.referrals: dict = {}
        self.prescriptions: dict = {}
        self.medications = {m[0]: {"name": m[0], "drug_class": m[1], "controlled": m[2], "max_refills": m[3]}
                            for m in MEDICATIONS}

    def add_patients(self) -> None:
        """24 adults and 6 children."""
        rng = self.rng
        for n, name in enumerate(ADULTS + CHILDREN):
            pid = f"PT-{1001 + n}"
            child = n >= len(ADULTS)
            born = date(rng.randint(2010, 2021), rng.randint(1, 12), rng.randint(1, 28)) if child else \
                date(rng.randint(1946, 2003), rng.randint(1, 12), rng.randint(1, 28))
            first, last = name.split()[0].lower(), name.split()[-1].lower()
            self.patients[pid] = {
                "patient_id": pid, "name": name, "date_of_birth": born.isoformat(),
                "phone": f"+1-555-{rng.randint(210, 980)}-{rng.randint(1000, 9999)}",
                "email": f"{first}.{last}@mailbox.example", "insurance_plan": rng.choice(PLANS),
                "allergies": sorted(rng.choice(ALLERGY_SETS)), "no_show_count": 0,
                "status": "inactive" if n == 13 else "active",
            }

    def is_child(self, pid: str) -> bool:
        """Under 18 today."""
        born = date.fromisoformat(self.patients[pid]["date_of_birth"])
        return (TODAY.year - born.year - ((TODAY.month, TODAY.day) < (born.month, born.day))) < 18

    def add_schedule(self) -> None:
        """Open slots for every working day in the window."""
        day = WINDOW[0]
        while day <= WINDOW[1]:
            for doc, weekdays in self.workdays.items():
                if day.weekday() in weekdays:
                    for time in TIMES:
                        sid = slot_id(doc, day, time)
                        self.slots[sid] = {"slot_id": sid, "doctor_id": doc, "date": day.isoformat(),
                                           "start_time": time, "duration_min": 30, "status": "open",
                                           "block_reason": None}
            day += timedelta(days=1)

    def can_book(self, pid: str, doc: str, day: date, time: str) -> bool:
        """Whether the history may hold this appointment under the environment's rules."""
        specialty = self.doctors[doc]["specialty"]
        if self.patients[pid]["status"] != "active" and day >= TODAY - timedelta(days=30):
            return False
        if (specialty == "pediatrics") != self.is_child(pid) and specialty != "dermatology":
            return False
        slot = self.slots.get(slot_id(doc, day, time))
        if slot is not None and slot["status"] != "open":
            return False
        live = [a for a in self.appointments.values() if a["patient_id"] == pid and a["status"] != "cancelled"]
        if any(a["date"] == day.isoformat() and (a["start_time"] == time or a["doctor_id"] == doc) for a in live):
            return False
        upcoming = [a for a in live if a["date"] >= TODAY.isoformat() and a["status"] in ("scheduled", "checked_in")]
        return not (day >= TODAY and len(upcoming) >= 3)

    def book(self, pid: str, doc: str, day: date, time: str, status: str) -> dict:
        """Record one appointment (and its slot, referral as needed)."""
        aid = f"A-{5001 + len(self.appointments)}"
        sid = slot_id(doc, day, time)
        if sid not in self.slots:
            self.slots[sid] = {"slot_id": sid, "doctor_id": doc, "date": day.isoformat(), "start_time": time,
                               "duration_min": 30, "status": "open", "block_reason": None}
        specialty = self.doctors[doc]["specialty"]
        referral_id = None
        if self.doctors[doc]["requires_referral"]:
            referral_id = self.add_referral(pid, specialty, day - timedelta(days=self.rng.randint(10, 50)),
                                            "used", aid if status != "cancelled" else None)
            if status == "cancelled":
                self.referrals[referral_id]["status"] = "active"
        visit = "video" if self.doctors[doc]["offers_video"] and self.rng.random() < 0.2 else "in-person"
        appt = {"appointment_id": aid, "patient_id": pid, "doctor_id": doc, "slot_id": sid,
                "date": day.isoformat(), "start_time": time, "visit_type": visit,
                "reason": self.rng.choice(REASONS[specialty]), "status": status,
                "booked_on": min(day - timedelta(days=self.rng.randint(2, 25)), TODAY).isoformat(),
                "referral_id": referral_id, "reschedule_count": 0, "cancel_reason": None,
                "late_cancellation": False, "notes": None}
        if status == "completed":
            appt["notes"] = "Seen and assessed; plan discussed with patient."
        if status == "cancelled":
            appt["cancel_reason"] = self.rng.choice(["patient request", "feeling better", "work conflict"])
        else:
            self.slots[sid]["status"] = "booked"
        if status == "no_show":
            self.patients[pid]["no_show_count"] += 1
        self.appointments[aid] = appt
        return appt

    def add_referral(self, pid: str, specialty: str, issued: date, status: str, used_by: str | None) -> str:
        """A referral from the patient's primary-care doctor (who must have seen them)."""
        rid = f"RF-{301 + len(self.referrals)}"
        gp = "D03" if self.is_child(pid) else ("D01" if int(pid[3:]) % 2 else "D02")
        self.referrals[rid] = {"referral_id": rid, "patient_id": pid, "from_doctor_id": gp, "specialty": specialty,
                               "reason": self.rng.choice(REASONS[specialty]), "issued_date": issued.isoformat(),
                               "expires_date": (issued + timedelta(days=90)).isoformat(), "status": status,
                               "used_appointment_id": used_by}
        return rid

    def workday(self, doc: str, lo: date, hi: date) -> date:
        """A random working day of `doc` in [lo, hi]."""
        while True:
            day = lo + timedelta(days=self.rng.randint(0, (hi - lo).days))
            if day.weekday() in self.workdays[doc]:
                return day

    def add_history(self) -> None:
        """Older completed primary-care visits (so patients are established), then the window's bookings."""
        rng = self.rng
        for pid in self.patients:
            gp = "D03" if self.is_child(pid) else ("D01" if int(pid[3:]) % 2 else "D02")
            for _ in range(rng.randint(1, 2)):
                day = self.workday(gp, date(2025, 5, 1), WINDOW[0] - timedelta(days=1))
                time = rng.choice(TIMES)
                if self.can_book(pid, gp, day, time):
                    self.book(pid, gp, day, time, "completed")
        for n, pid in enumerate(sorted(self.patients)):
            if n % 3 == 0 and not self.is_child(pid):
                doc = rng.choice(["D04", "D05", "D06", "D07", "D08"])
                day = self.workday(doc, date(2025, 9, 1), WINDOW[0] - timedelta(days=1))
                time = rng.choice(TIMES)
                if self.can_book(pid, doc, day, time):
                    self.book(pid, doc, day, time, "completed")
        pids = sorted(self.patients)
        for sid in sorted(self.slots):
            slot = self.slots[sid]
            day = date.fromisoformat(slot["date"])
            if day < WINDOW[0] or slot["status"] != "open":
                continue
            past, today = day < TODAY, day == TODAY
            if rng.random() > (0.45 if past else 0.6 if today else 0.3):
                continue
            doc = slot["doctor_id"]
            for pid in rng.sample(pids, len(pids)):
                established = any(a["patient_id"] == pid and a["doctor_id"] == doc and a["status"] == "completed"
                                  for a in self.appointments.values())
                if not self.doctors[doc]["accepts_new_patients"] and not established:
                    continue
                if self.can_book(pid, doc, day, slot["start_time"]):
                    roll = rng.random()
                    if past:
                        status = "no_show" if roll < 0.1 else "cancelled" if roll < 0.2 else "completed"
                    elif today:
                        status = "checked_in" if slot["start_time"] <= "09:30" and roll < 0.7 else "scheduled"
                    else:
                        status = "cancelled" if roll < 0.1 else "scheduled"
                    self.book(pid, doc, day, slot["start_time"], status)
                    break

    def add_spare_referrals(self) -> None:
        """Unused referrals: valid, expired and revoked."""
        adults = [p for p in sorted(self.patients) if not self.is_child(p) and self.patients[p]["status"] == "active"]
        for n, pid in enumerate(adults[1::4]):
            specialty = ["cardiology", "neurology", "orthopedics"][n % 3]
            if any(r["patient_id"] == pid and r["specialty"] == specialty for r in self.referrals.values()):
                continue
            issued = TODAY - timedelta(days=[12, 120, 30, 95, 40, 7][n % 6])
            rid = self.add_referral(pid, specialty, issued, "revoked" if n == 4 else "active", None)
            self.referrals[rid]["status"] = "revoked" if n == 4 else "active"

    def add_prescriptions(self) -> None:
        """Prescriptions by doctors who saw the patient; some out of refills, expired or discontinued."""
        rng = self.rng
        completed = sorted((a for a in self.appointments.values() if a["status"] == "completed"),
                           key=lambda a: a["appointment_id"])
        for appt in completed[::3]:
            patient = self.patients[appt["patient_id"]]
            specialty = self.doctors[appt["doctor_id"]]["specialty"]
            options = [self.medications[m] for m in SPECIALTY_MEDS[specialty]
                       if m not in patient["allergies"] and self.medications[m]["drug_class"] not in patient["allergies"]]
            med = rng.choice(options)
            if any(rx["patient_id"] == patient["patient_id"] and rx["medication"] == med["name"]
                   for rx in self.prescriptions.values()):
                continue
            rxid = f"RX-{7001 + len(self.prescriptions)}"
            issued = date.fromisoformat(appt["date"])
            refills = rng.randint(0, med["max_refills"])
            used = min(refills, rng.randint(0, 2))
            discontinued = rng.random() < 0.12
            self.prescriptions[rxid] = {
                "rx_id": rxid, "patient_id": patient["patient_id"], "doctor_id": appt["doctor_id"],
                "medication": med["name"], "dosage": rng.choice(["once daily", "twice daily", "as needed",
                                                                 "three times daily"]),
                "issued_date": issued.isoformat(), "refills_remaining": refills - used,
                "last_filled": min(issued + timedelta(days=30 * used), TODAY - timedelta(days=1)).isoformat(),
                "status": "discontinued" if discontinued else "active",
                "discontinue_reason": "side effects" if discontinued else None,
            }

    def state(self) -> dict:
        """The JSON state, keyed by the environment's attribute names."""
        return {"today": TODAY.isoformat(), "patients": self.patients, "doctors": self.doctors,
                "slots": dict(sorted(self.slots.items())), "appointments": self.appointments,
                "referrals": self.referrals, "medications": self.medications, "prescriptions": self.prescriptions}


def build() -> dict:
    """Build the default state."""
    builder = Builder()
    builder.add_patients()
    builder.add_schedule()
    builder.add_history()
    builder.add_spare_referrals()
    builder.add_prescriptions()
    return builder.state()


def main() -> None:
    """Write default_state.json next to this script."""
    state = build()
    (HERE / "default_state.json").write_text(json.dumps(state, indent=1, ensure_ascii=False) + "\n")
    counts = {k: len(v) for k, v in state.items() if isinstance(v, dict)}
    print(f"wrote {HERE / 'default_state.json'}: {counts}")


if __name__ == "__main__":
    main()
