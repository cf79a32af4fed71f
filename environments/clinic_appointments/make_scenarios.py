"""Write scenarios/clinic_appointments.jsonl and verify every scenario against the environment.

Run from anywhere: python environments/clinic_appointments/make_scenarios.py
Exits non-zero when a validator is not a bool, passes on the untouched initial state, a reference
call fails, or a validator fails after the reference solution.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from envscaler_mcp.catalog.store import save_scenarios  # noqa: E402
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall  # noqa: E402
from envscaler_mcp.skeleton.models import Provenance  # noqa: E402

ENV_ID = "clinic_appointments"
STATE: dict[str, Any] = json.loads((HERE / "default_state.json").read_text())
TODAY = STATE["today"]

# Daniel Brooks's physical has already been moved twice: it can no longer be rescheduled.
TWICE_MOVED = copy.deepcopy(STATE)
TWICE_MOVED["appointments"]["A-5074"]["reschedule_count"] = 2

# Validator helpers. `initial_state` is a global the runner provides.
NEW = {
    "new_appts": '[a for k, a in final_state["appointments"].items() if k not in initial_state["appointments"]]',
    "new_refs": '[r for k, r in final_state["referrals"].items() if k not in initial_state["referrals"]]',
    "new_rx": '[r for k, r in final_state["prescriptions"].items() if k not in initial_state["prescriptions"]]',
    "new_patients": '[p for k, p in final_state["patients"].items() if k not in initial_state["patients"]]',
}


def check(body: str) -> str:
    """Wrap a boolean expression (may use the lists in NEW) into a check_func source."""
    lines = ["def check_func(final_state):"]
    lines += [f"    {name} = {expr}" for name, expr in NEW.items() if name in body]
    lines.append(f"    return bool({body})")
    return "\n".join(lines) + "\n"


def appt(aid: str, field: str) -> str:
    """Expression: a field of an appointment in the final state."""
    return f'final_state["appointments"]["{aid}"]["{field}"]'


def unchanged(path: str) -> str:
    """Expression: the value at `path` is as it was initially."""
    return f"final_state{path} == initial_state{path}"


SPECS: list[dict[str, Any]] = [
    {
        "title": "Cancel a dermatology visit",
        "task": "Please cancel appointment A-5131 - Oliver Grant has a work conflict on April 13.",
        "checklist": [
            ("Has appointment A-5131 been cancelled?", appt("A-5131", "status") + ' == "cancelled"'),
            ("Has slot D05-2026-04-13-1000 been reopened?",
             'final_state["slots"]["D05-2026-04-13-1000"]["status"] == "open"'),
            ("Has Oliver Grant's other appointment A-5076 stayed scheduled?",
             appt("A-5076", "status") + ' == "scheduled"', False),
        ],
        "solution": [("cancel_appointment", {"appointment_id": "A-5131", "reason": "work conflict"})],
    },
    {
        "title": "Refill a prescription",
        "task": "Kwame Asante is at the pharmacy counter: please refill his prescription RX-7005.",
        "checklist": [
            ("Has RX-7005 gone down to 3 refills remaining?",
             'final_state["prescriptions"]["RX-7005"]["refills_remaining"] == 3'),
            (f"Has RX-7005 been marked as filled on {TODAY}?",
             f'final_state["prescriptions"]["RX-7005"]["last_filled"] == "{TODAY}"'),
            ("Has Kwame Asante's other prescription RX-7023 been left as it was?",
             unchanged('["prescriptions"]["RX-7023"]'), False),
        ],
        "solution": [("refill_prescription", {"rx_id": "RX-7005"})],
    },
    {
        "title": "Referral and first neurology visit",
        "task": "Hi, I'm Margaret Ellison, born 20 September 1995. Dr. Moreno wants me to see a neurologist "
                "about my migraines. Please sort out the referral and book me the first neurology appointment "
                "available next Monday, April 13.",
        "checklist": [
            ("Has a neurology referral from Dr. Moreno (D01) been created for Margaret Ellison (PT-1001)?",
             'any(r["patient_id"] == "PT-1001" and r["specialty"] == "neurology" and r["from_doctor_id"] == "D01" '
             "for r in new_refs)"),
            ("Has Margaret been booked into Dr. Whitfield's 09:00 slot on 2026-04-13?",
             'any(a["patient_id"] == "PT-1001" and a["slot_id"] == "D08-2026-04-13-0900" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Has the new appointment used up the new referral?",
             'any(a["patient_id"] == "PT-1001" and a["referral_id"] is not None and any(r["referral_id"] == '
             'a["referral_id"] and r["status"] == "used" for r in new_refs) for a in new_appts)'),
            ("Has slot D08-2026-04-13-0900 been marked booked?",
             'final_state["slots"]["D08-2026-04-13-0900"]["status"] == "booked"'),
        ],
        "solution": [
            ("find_patients", {"name": "Margaret Ellison", "date_of_birth": "1995-09-20"}),
            ("create_referral", {"patient_id": "PT-1001", "from_doctor_id": "D01", "specialty": "neurology",
                                 "reason": "migraines"}),
            ("find_open_slots", {"specialty": "neurology", "date_from": "2026-04-13", "date_to": "2026-04-13"}),
            ("book_appointment", {"patient_id": "PT-1001", "slot_id": "D08-2026-04-13-0900",
                                  "reason": "migraines"}),
        ],
    },
    {
        "title": "Cardiology with an expired referral and a full calendar",
        "task": "Lena Hoffmann (born 1998-10-18) needs her cardiology consult with Dr. Kaplan on April 14 at "
                "09:00; she has a referral from Dr. Moreno from January. If that referral is no longer valid, "
                "have Dr. Moreno issue a new one (reason: chest discomfort). She also told us she no longer "
                "needs her mole check with dermatology on April 14.",
        "checklist": [
            ("Has Lena's dermatology appointment A-5132 been cancelled?",
             appt("A-5132", "status") + ' == "cancelled"'),
            ("Has a new cardiology referral from Dr. Moreno (D01) been issued for Lena (PT-1015)?",
             'any(r["patient_id"] == "PT-1015" and r["specialty"] == "cardiology" and r["from_doctor_id"] == "D01" '
             "for r in new_refs)"),
            ("Has Lena been booked with Dr. Kaplan in slot D04-2026-04-14-0900?",
             'any(a["patient_id"] == "PT-1015" and a["slot_id"] == "D04-2026-04-14-0900" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Have Lena's neurology (A-5151) and orthopedics (A-5141) appointments stayed scheduled?",
             appt("A-5151", "status") + ' == "scheduled" and ' + appt("A-5141", "status") + ' == "scheduled"',
             False),
        ],
        "solution": [
            ("find_patients", {"name": "Lena Hoffmann", "date_of_birth": "1998-10-18"}),
            ("list_referrals", {"patient_id": "PT-1015"}),
            ("list_appointments", {"patient_id": "PT-1015", "upcoming_only": True}),
            ("cancel_appointment", {"appointment_id": "A-5132", "reason": "no longer needed"}),
            ("create_referral", {"patient_id": "PT-1015", "from_doctor_id": "D01", "specialty": "cardiology",
                                 "reason": "chest discomfort"}),
            ("book_appointment", {"patient_id": "PT-1015", "slot_id": "D04-2026-04-14-0900",
                                  "reason": "chest discomfort"}),
        ],
    },
    {
        "title": "Doctor off sick: block the day and move patients",
        "task": "Dr. Whitfield is off sick this Thursday, April 9. Block his schedule for that day so nobody "
                "else books it, and move both of his patients from that day to his clinic on Monday, April 13, "
                "at the same times they had.",
        "checklist": [
            ("Has A-5150 been moved to Dr. Whitfield's 09:30 slot on 2026-04-13?",
             appt("A-5150", "slot_id") + ' == "D08-2026-04-13-0930" and '
             + appt("A-5150", "status") + ' == "scheduled"'),
            ("Has A-5151 been moved to Dr. Whitfield's 10:00 slot on 2026-04-13?",
             appt("A-5151", "slot_id") + ' == "D08-2026-04-13-1000" and '
             + appt("A-5151", "status") + ' == "scheduled"'),
            ("Are all of Dr. Whitfield's slots on 2026-04-09 blocked?",
             'all(s["status"] == "blocked" for s in final_state["slots"].values() '
             'if s["doctor_id"] == "D08" and s["date"] == "2026-04-09")'),
            ("Has his existing Monday appointment A-5152 been left in place?",
             unchanged('["appointments"]["A-5152"]'), False),
        ],
        "solution": [
            ("block_doctor_day", {"doctor_id": "D08", "day": "2026-04-09", "reason": "doctor off sick"}),
            ("find_open_slots", {"doctor_id": "D08", "date_from": "2026-04-13", "date_to": "2026-04-13"}),
            ("reschedule_appointment", {"appointment_id": "A-5150", "new_slot_id": "D08-2026-04-13-0930"}),
            ("reschedule_appointment", {"appointment_id": "A-5151", "new_slot_id": "D08-2026-04-13-1000"}),
        ],
    },
    {
        "title": "Visit, notes and a safe prescription",
        "task": "Hugo Lambert has just arrived for his 9:00 blood pressure check with Dr. Osei today. Check him "
                "in. After the visit, close it with the note 'BP 150/95, start ACE inhibitor'. Dr. Osei wants "
                "to prescribe lisinopril 10 mg once daily with 5 refills, and ibuprofen as needed for his back "
                "- but skip anything Hugo cannot safely take.",
        "checklist": [
            ("Has appointment A-5093 been completed with the note 'BP 150/95, start ACE inhibitor'?",
             appt("A-5093", "status") + ' == "completed" and '
             + appt("A-5093", "notes") + ' == "BP 150/95, start ACE inhibitor"'),
            ("Has an active lisinopril prescription with 5 refills from Dr. Osei (D02) been issued to Hugo?",
             'any(r["patient_id"] == "PT-1024" and r["medication"] == "lisinopril" and r["doctor_id"] == "D02" '
             'and r["refills_remaining"] == 5 and r["status"] == "active" for r in new_rx)'),
            ("Has no ibuprofen been prescribed to Hugo, who is allergic to NSAIDs?",
             'not any(r["patient_id"] == "PT-1024" and r["medication"] == "ibuprofen" for r in new_rx)', False),
            ("Has Hugo's orthopedics appointment A-5140 today stayed scheduled?",
             appt("A-5140", "status") + ' == "scheduled"', False),
        ],
        "solution": [
            ("find_patients", {"name": "Hugo Lambert"}),
            ("list_appointments", {"patient_id": "PT-1024", "day": TODAY}),
            ("check_in", {"appointment_id": "A-5093"}),
            ("complete_appointment", {"appointment_id": "A-5093", "notes": "BP 150/95, start ACE inhibitor"}),
            ("get_patient", {"patient_id": "PT-1024"}),
            ("prescribe", {"patient_id": "PT-1024", "doctor_id": "D02", "medication": "lisinopril",
                           "dosage": "10 mg once daily", "refills": 5}),
        ],
    },
    {
        "title": "Register a child and book pediatrics",
        "task": "I'm Kwame Asante. My younger son Theo Asante, born 2019-06-14, isn't registered with you yet. "
                "Please register him (phone +1-555-472-2112, email kwame.asante@mailbox.example, insurance "
                "Meridian HMO, allergic to penicillins) and book him the earliest pediatric appointment this "
                "Friday, April 10, for ear pain.",
        "checklist": [
            ("Has Theo Asante, born 2019-06-14, been registered?",
             'any(p["name"] == "Theo Asante" and p["date_of_birth"] == "2019-06-14" for p in new_patients)'),
            ("Has Theo's penicillin allergy been recorded?",
             'any(p["name"] == "Theo Asante" and p["allergies"] == ["penicillins"] for p in new_patients)'),
            ("Has Theo been booked into Dr. Jensen's 09:30 slot on 2026-04-10?",
             'any(a["slot_id"] == "D03-2026-04-10-0930" and a["status"] == "scheduled" and any('
             'p["patient_id"] == a["patient_id"] and p["name"] == "Theo Asante" for p in new_patients) '
             "for a in new_appts)"),
            ("Has Theo's insurance been recorded as Meridian HMO?",
             'any(p["name"] == "Theo Asante" and p["insurance_plan"] == "Meridian HMO" for p in new_patients)'),
        ],
        "solution": [
            ("register_patient", {"name": "Theo Asante", "date_of_birth": "2019-06-14", "phone": "+1-555-472-2112",
                                  "email": "kwame.asante@mailbox.example", "insurance_plan": "Meridian HMO",
                                  "allergies": ["penicillins"]}),
            ("find_open_slots", {"specialty": "pediatrics", "date_from": "2026-04-10", "date_to": "2026-04-10"}),
            ("book_appointment", {"patient_id": "PT-1031", "slot_id": "D03-2026-04-10-0930",
                                  "reason": "ear pain"}),
        ],
    },
    {
        "title": "Morning close-out for cardiology",
        "task": "Dr. Kaplan's patients booked at 9:00 and 9:30 this morning never showed up - please record "
                "those. His 10:00 patient, Samuel Achebe, has just arrived: check him in.",
        "checklist": [
            ("Has A-5115 been recorded as a no-show?", appt("A-5115", "status") + ' == "no_show"'),
            ("Has A-5116 been recorded as a no-show?", appt("A-5116", "status") + ' == "no_show"'),
            ("Have the no-show counts of Ivan Sokolov (PT-1010) and Beatrice Wong (PT-1013) each grown by one?",
             'all(final_state["patients"][p]["no_show_count"] == initial_state["patients"][p]["no_show_count"] + 1 '
             'for p in ("PT-1010", "PT-1013"))'),
            ("Has Samuel Achebe's appointment A-5117 been checked in?", appt("A-5117", "status") + ' == "checked_in"'),
            ("Has the 10:30 appointment A-5118 stayed scheduled?", appt("A-5118", "status") + ' == "scheduled"',
             False),
        ],
        "solution": [
            ("get_doctor_day", {"doctor_id": "D04", "day": TODAY}),
            ("mark_no_show", {"appointment_id": "A-5115"}),
            ("mark_no_show", {"appointment_id": "A-5116"}),
            ("check_in", {"appointment_id": "A-5117"}),
        ],
    },
    {
        "title": "Move a physical that was already moved twice",
        "initial_state": TWICE_MOVED,
        "task": "This is Daniel Brooks. Please move my annual physical with Dr. Moreno from April 9 to Monday, "
                "April 13 at 9:00. If the system won't let you move it, cancel it and book that Monday slot as "
                "a new appointment instead. Don't touch my other appointments.",
        "checklist": [
            ("Has the April 9 physical A-5074 been cancelled?", appt("A-5074", "status") + ' == "cancelled"'),
            ("Has Daniel (PT-1004) been booked into slot D01-2026-04-13-0900?",
             'any(a["patient_id"] == "PT-1004" and a["slot_id"] == "D01-2026-04-13-0900" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Have Daniel's dermatology appointments A-5129 and A-5136 stayed as they were?",
             unchanged('["appointments"]["A-5129"]') + " and " + unchanged('["appointments"]["A-5136"]'), False),
            ("Has the old slot D01-2026-04-09-0930 been reopened?",
             'final_state["slots"]["D01-2026-04-09-0930"]["status"] == "open"'),
        ],
        "solution": [
            ("find_patients", {"name": "Daniel Brooks"}),
            ("list_appointments", {"patient_id": "PT-1004", "upcoming_only": True}),
            ("cancel_appointment", {"appointment_id": "A-5074", "reason": "moved to 2026-04-13"}),
            ("book_appointment", {"patient_id": "PT-1004", "slot_id": "D01-2026-04-13-0900",
                                  "reason": "annual physical"}),
        ],
    },
    {
        "title": "Switch blood-pressure medication",
        "task": "Dr. Osei has asked us to stop Ivan Sokolov's lisinopril because of a persistent dry cough and "
                "replace it with losartan 50 mg once daily with 5 refills. He suggested codeine cough syrup too, "
                "if Ivan can take it. Ivan would also like his acetaminophen refilled today.",
        "checklist": [
            ("Has Ivan's lisinopril prescription RX-7006 been discontinued?",
             'final_state["prescriptions"]["RX-7006"]["status"] == "discontinued"'),
            ("Has an active losartan prescription with 5 refills from Dr. Osei (D02) been issued to Ivan?",
             'any(r["patient_id"] == "PT-1010" and r["medication"] == "losartan" and r["doctor_id"] == "D02" '
             'and r["refills_remaining"] == 5 and r["status"] == "active" for r in new_rx)'),
            ("Has no codeine been prescribed to Ivan, who is allergic to it?",
             'not any(r["patient_id"] == "PT-1010" and r["medication"] == "codeine" for r in new_rx)', False),
            ("Has the acetaminophen prescription RX-7018 been refilled today (4 refills left)?",
             'final_state["prescriptions"]["RX-7018"]["refills_remaining"] == 4 and '
             f'final_state["prescriptions"]["RX-7018"]["last_filled"] == "{TODAY}"'),
        ],
        "solution": [
            ("find_patients", {"name": "Ivan Sokolov"}),
            ("list_prescriptions", {"patient_id": "PT-1010", "status": "active"}),
            ("discontinue_prescription", {"rx_id": "RX-7006", "reason": "persistent dry cough"}),
            ("prescribe", {"patient_id": "PT-1010", "doctor_id": "D02", "medication": "losartan",
                           "dosage": "50 mg once daily", "refills": 5}),
            ("get_patient", {"patient_id": "PT-1010"}),
            ("refill_prescription", {"rx_id": "RX-7018"}),
        ],
    },
    {
        "title": "Dermatologist closed to new patients",
        "task": "Clara Dubois would like a dermatology appointment for a rash with Dr. Rahman on April 8 at "
                "9:00. If he can't take her, book her the first open slot with Dr. Nakamura on April 9 instead, "
                "as a video visit.",
        "checklist": [
            ("Has Clara (PT-1023) been booked into Dr. Nakamura's 09:00 slot on 2026-04-09?",
             'any(a["patient_id"] == "PT-1023" and a["slot_id"] == "D05-2026-04-09-0900" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Is Clara's new appointment a video visit?",
             'any(a["patient_id"] == "PT-1023" and a["visit_type"] == "video" for a in new_appts)'),
            ("Has no appointment been booked for Clara with Dr. Rahman (D06)?",
             'not any(a["patient_id"] == "PT-1023" and a["doctor_id"] == "D06" for a in new_appts)', False),
            ("Has Dr. Rahman's 09:00 slot on 2026-04-08 stayed open?",
             'final_state["slots"]["D06-2026-04-08-0900"]["status"] == "open"', False),
        ],
        "solution": [
            ("find_patients", {"name": "Clara Dubois"}),
            ("list_doctors", {"specialty": "dermatology"}),
            ("list_appointments", {"patient_id": "PT-1023", "doctor_id": "D06"}),
            ("find_open_slots", {"doctor_id": "D05", "date_from": "2026-04-09", "date_to": "2026-04-09"}),
            ("book_appointment", {"patient_id": "PT-1023", "slot_id": "D05-2026-04-09-0900", "reason": "rash",
                                  "visit_type": "video"}),
        ],
    },
]


def build() -> list[Scenario]:
    """Scenario models from SPECS."""
    out = []
    for spec in SPECS:
        items = [
            ChecklistItem(id=f"c{n}", description=entry[0], validator=check(entry[1]),
                          claims_change=entry[2] if len(entry) > 2 else True)
            for n, entry in enumerate(spec["checklist"], 1)
        ]
        calls = [ToolCall(tool=t, arguments=a) for t, a in spec["solution"]]
        out.append(Scenario(
            env_id=ENV_ID, title=spec["title"], task=spec["task"],
            initial_state=copy.deepcopy(spec.get("initial_state", STATE)), checklist=items,
            reference_solution=calls, difficulty=len(calls), provenance=Provenance(source="hand-authored"),
        ).with_id())
    return out


def load_class() -> type:
    """The environment class (authoring script: trusted, in-process)."""
    meta = json.loads((HERE / "meta.json").read_text())
    spec = importlib.util.spec_from_file_location(f"{ENV_ID}_env", HERE / "environment.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, meta["class_name"])


def run_validators(sc: Scenario, final_state: dict[str, Any]) -> list[Any]:
    """Each validator's return value on `final_state`."""
    results = []
    for item in sc.checklist:
        namespace: dict[str, Any] = {"initial_state": copy.deepcopy(sc.initial_state)}
        exec(item.validator or "", namespace)
        results.append(namespace["check_func"](copy.deepcopy(final_state)))
    return results


def verify(scenarios: list[Scenario]) -> list[str]:
    """Problems found (empty when every scenario is sound)."""
    cls = load_class()
    problems = []
    for sc in scenarios:
        where = f"{sc.id} ({sc.title})"
        before = run_validators(sc, sc.initial_state)
        if any(not isinstance(v, bool) for v in before):
            problems.append(f"{where}: a validator returned a non-bool on the initial state")
        if all(before):
            problems.append(f"{where}: every validator already passes on the initial state")
        for item, value in zip(sc.checklist, before, strict=True):
            if item.claims_change and value:
                problems.append(f"{where}: {item.id} claims a change but passes on the initial state")
        env = cls()
        for key, value in copy.deepcopy(sc.initial_state).items():
            setattr(env, key, value)
        for n, call in enumerate(sc.reference_solution, 1):
            result = getattr(env, call.tool)(**call.arguments)
            if not (isinstance(result, dict) and result.get("success") is True):
                problems.append(f"{where}: reference call {n} {call.tool} failed: {result}")
        final = json.loads(json.dumps({key: getattr(env, key) for key in sc.initial_state}))
        after = run_validators(sc, final)
        for item, value in zip(sc.checklist, after, strict=True):
            if value is not True:
                problems.append(f"{where}: {item.id} is {value!r} after the reference solution")
    return problems


def main() -> int:
    """Build, verify, write; return the exit code."""
    scenarios = build()
    problems = verify(scenarios)
    for problem in problems:
        print("FAIL", problem)
    if problems:
        return 1
    path = ROOT / "scenarios" / f"{ENV_ID}.jsonl"
    save_scenarios(scenarios, path)
    easy = sum(1 for s in scenarios if (s.difficulty or 0) <= 2)
    print(f"wrote {path}: {len(scenarios)} scenarios ({easy} easy), all verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
