"""Scenarios of clinic_appointments: hand-authored clinic front desk tasks, each with a plausible wrong solution (WRONG).

`python environments/clinic_appointments/make_scenarios.py [--check]` gates them through the environment's generated server
and writes scenarios/clinic_appointments.jsonl only when all pass (envscaler_mcp.authoring.main; exit code 1 otherwise).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from envscaler_mcp import authoring
from envscaler_mcp.authoring import unchanged

HERE = Path(__file__).resolve().parent
ENV_ID = "clinic_appointments"
STATE: dict[str, Any] = authoring.default_state(HERE)
TODAY = STATE["today"]

KWAME_PHONE = STATE["patients"]["PT-1008"]["phone"]

# Daniel Brooks's dermatology visit has already been moved twice: it can no longer be rescheduled.
TWICE_MOVED = copy.deepcopy(STATE)
TWICE_MOVED["appointments"]["A-5112"]["reschedule_count"] = 2

# Helper lists a validator expression may use. `initial_state` is a global the runner provides.
NEW = {
    "new_appts": '[a for k, a in final_state["appointments"].items() if k not in initial_state["appointments"]]',
    "new_refs": '[r for k, r in final_state["referrals"].items() if k not in initial_state["referrals"]]',
    "new_rx": '[r for k, r in final_state["prescriptions"].items() if k not in initial_state["prescriptions"]]',
    "new_patients": '[p for k, p in final_state["patients"].items() if k not in initial_state["patients"]]',
}


def appt(aid: str, field: str) -> str:
    """Expression: a field of an appointment in the final state."""
    return f'final_state["appointments"]["{aid}"]["{field}"]'


SPECS: list[dict[str, Any]] = [
    {
        "title": "Cancel a dermatology visit",
        "task": "Please cancel appointment A-5104 - Margaret Ellison has a work conflict on April 13.",
        "checklist": [
            ("Has appointment A-5104 been cancelled?", appt("A-5104", "status") + ' == "cancelled"'),
            ("Has slot D05-2026-04-13-0930 been reopened?",
             'final_state["slots"]["D05-2026-04-13-0930"]["status"] == "open"'),
            ("Has Margaret's other appointment A-5100 stayed scheduled?",
             appt("A-5100", "status") + ' == "scheduled"', False),
        ],
        "solution": [("cancel_appointment", {"appointment_id": "A-5104", "reason": "work conflict"})],
    },
    {
        "title": "Refill a prescription",
        "task": "Daniel Brooks is at the pharmacy counter: please refill his prescription RX-7003.",
        "checklist": [
            ("Has RX-7003 gone down to 3 refills remaining?",
             'final_state["prescriptions"]["RX-7003"]["refills_remaining"] == 3'),
            (f"Has RX-7003 been marked as filled on {TODAY}?",
             f'final_state["prescriptions"]["RX-7003"]["last_filled"] == "{TODAY}"'),
            ("Has Daniel's other prescription RX-7025 been left as it was?",
             unchanged('["prescriptions"]["RX-7025"]'), False),
        ],
        "solution": [("refill_prescription", {"rx_id": "RX-7003"})],
    },
    {
        "title": "Referral and first neurology visit",
        "task": "Hi, I'm Margaret Ellison, born 20 September 1995. Dr. Moreno wants me to see a neurologist "
                "about my migraines. Please sort out the referral and book me the first neurology appointment "
                "next Monday, April 13, that doesn't clash with my other appointments.",
        "checklist": [
            ("Has a neurology referral from Dr. Moreno (D01) been created for Margaret Ellison (PT-1001)?",
             'any(r["patient_id"] == "PT-1001" and r["specialty"] == "neurology" and r["from_doctor_id"] == "D01" '
             "for r in new_refs)"),
            ("Has Margaret been booked into Dr. Whitfield's 10:00 slot on 2026-04-13 (09:30 clashes with her "
             "dermatology visit)?",
             'any(a["patient_id"] == "PT-1001" and a["slot_id"] == "D08-2026-04-13-1000" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Has the new appointment used up the new referral?",
             'any(a["patient_id"] == "PT-1001" and a["referral_id"] is not None and any(r["referral_id"] == '
             'a["referral_id"] and r["status"] == "used" for r in new_refs) for a in new_appts)'),
            ("Has Margaret's dermatology appointment A-5104 been kept?",
             unchanged('["appointments"]["A-5104"]'), False),
        ],
        "solution": [
            ("find_patients", {"name": "Margaret Ellison", "date_of_birth": "1995-09-20"}),
            ("create_referral", {"patient_id": "PT-1001", "from_doctor_id": "D01", "specialty": "neurology",
                                 "reason": "migraines"}),
            ("find_open_slots", {"specialty": "neurology", "date_from": "2026-04-13", "date_to": "2026-04-13"}),
            ("list_appointments", {"patient_id": "PT-1001", "day": "2026-04-13"}),
            ("book_appointment", {"patient_id": "PT-1001", "slot_id": "D08-2026-04-13-1000",
                                  "reason": "migraines"}),
        ],
    },
    {
        "title": "Cardiology with an expired referral",
        "task": "Lena Hoffmann (born 1998-10-18) needs her cardiology consult with Dr. Kaplan on April 14 at "
                "09:00; she has a referral from Dr. Moreno from January. If that referral is no longer valid, "
                "have Dr. Moreno issue a new one (reason: post-ECG follow-up). She also told us she no longer "
                "needs her dermatology appointment on April 9.",
        "checklist": [
            ("Has Lena's dermatology appointment A-5103 been cancelled?",
             appt("A-5103", "status") + ' == "cancelled"'),
            ("Has a new cardiology referral from Dr. Moreno (D01) been issued for Lena (PT-1015)?",
             'any(r["patient_id"] == "PT-1015" and r["specialty"] == "cardiology" and r["from_doctor_id"] == "D01" '
             "for r in new_refs)"),
            ("Has Lena been booked with Dr. Kaplan in slot D04-2026-04-14-0900?",
             'any(a["patient_id"] == "PT-1015" and a["slot_id"] == "D04-2026-04-14-0900" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Has Lena's orthopedics appointment A-5120 stayed as it was?",
             unchanged('["appointments"]["A-5120"]'), False),
        ],
        "solution": [
            ("find_patients", {"name": "Lena Hoffmann", "date_of_birth": "1998-10-18"}),
            ("list_referrals", {"patient_id": "PT-1015"}),
            ("list_appointments", {"patient_id": "PT-1015", "upcoming_only": True}),
            ("cancel_appointment", {"appointment_id": "A-5103", "reason": "no longer needed"}),
            ("create_referral", {"patient_id": "PT-1015", "from_doctor_id": "D01", "specialty": "cardiology",
                                 "reason": "post-ECG follow-up"}),
            ("book_appointment", {"patient_id": "PT-1015", "slot_id": "D04-2026-04-14-0900",
                                  "reason": "post-ECG follow-up"}),
        ],
    },
    {
        "title": "Doctor off sick: block the day and move patients",
        "task": "Dr. Moreno is off sick this Thursday, April 9. Block her schedule for that day so nobody else "
                "books it, and move each of her patients from that day to her clinic on Monday, April 13, at "
                "the same time they had.",
        "checklist": [
            ("Has A-5065 been moved to Dr. Moreno's 09:00 slot on 2026-04-13?",
             appt("A-5065", "slot_id") + ' == "D01-2026-04-13-0900" and '
             + appt("A-5065", "status") + ' == "scheduled"'),
            ("Has A-5066 been moved to Dr. Moreno's 10:00 slot on 2026-04-13?",
             appt("A-5066", "slot_id") + ' == "D01-2026-04-13-1000" and '
             + appt("A-5066", "status") + ' == "scheduled"'),
            ("Has A-5067 been moved to Dr. Moreno's 10:30 slot on 2026-04-13?",
             appt("A-5067", "slot_id") + ' == "D01-2026-04-13-1030" and '
             + appt("A-5067", "status") + ' == "scheduled"'),
            ("Are all of Dr. Moreno's slots on 2026-04-09 blocked?",
             'all(s["status"] == "blocked" for s in final_state["slots"].values() '
             'if s["doctor_id"] == "D01" and s["date"] == "2026-04-09")'),
            ("Has her existing Monday appointment A-5068 been left in place?",
             unchanged('["appointments"]["A-5068"]'), False),
        ],
        "solution": [
            ("block_doctor_day", {"doctor_id": "D01", "day": "2026-04-09", "reason": "doctor off sick"}),
            ("find_open_slots", {"doctor_id": "D01", "date_from": "2026-04-13", "date_to": "2026-04-13"}),
            ("reschedule_appointment", {"appointment_id": "A-5065", "new_slot_id": "D01-2026-04-13-0900"}),
            ("reschedule_appointment", {"appointment_id": "A-5066", "new_slot_id": "D01-2026-04-13-1000"}),
            ("reschedule_appointment", {"appointment_id": "A-5067", "new_slot_id": "D01-2026-04-13-1030"}),
        ],
    },
    {
        "title": "Visit, notes and a safe prescription",
        "task": "Kwame Asante has just arrived for his 10:30 appointment with Dr. Osei today. Check him in. After "
                "the visit, close it with the note 'BP 150/95, start ACE inhibitor'. Dr. Osei wants to prescribe "
                "lisinopril 10 mg once daily with 5 refills, and ibuprofen as needed for his knee - but skip "
                "anything Kwame cannot safely take.",
        "checklist": [
            ("Has appointment A-5072 been completed with the note 'BP 150/95, start ACE inhibitor'?",
             appt("A-5072", "status") + ' == "completed" and '
             + appt("A-5072", "notes") + ' == "BP 150/95, start ACE inhibitor"'),
            ("Has an active lisinopril prescription with 5 refills from Dr. Osei (D02) been issued to Kwame?",
             'any(r["patient_id"] == "PT-1008" and r["medication"] == "lisinopril" and r["doctor_id"] == "D02" '
             'and r["refills_remaining"] == 5 and r["status"] == "active" for r in new_rx)'),
            ("Has no ibuprofen been prescribed to Kwame, who is allergic to NSAIDs?",
             'not any(r["patient_id"] == "PT-1008" and r["medication"] == "ibuprofen" for r in new_rx)', False),
            ("Has Kwame's 10:00 appointment with Dr. Moreno (A-5063) been left as it was?",
             unchanged('["appointments"]["A-5063"]'), False),
        ],
        "solution": [
            ("find_patients", {"name": "Kwame Asante"}),
            ("list_appointments", {"patient_id": "PT-1008", "day": TODAY}),
            ("check_in", {"appointment_id": "A-5072"}),
            ("complete_appointment", {"appointment_id": "A-5072", "notes": "BP 150/95, start ACE inhibitor"}),
            ("get_patient", {"patient_id": "PT-1008"}),
            ("prescribe", {"patient_id": "PT-1008", "doctor_id": "D02", "medication": "lisinopril",
                           "dosage": "10 mg once daily", "refills": 5}),
        ],
    },
    {
        "title": "Register a child and book pediatrics",
        "task": f"I'm Kwame Asante. My younger son Theo Asante, born 2019-06-14, isn't registered with you yet. "
                f"Please register him (phone {KWAME_PHONE}, email kwame.asante@mailbox.example, insurance "
                "Meridian HMO, allergic to penicillins) and book him the earliest pediatric appointment this "
                "Friday, April 10, for ear pain.",
        "checklist": [
            ("Has Theo Asante, born 2019-06-14, been registered?",
             'any(p["name"] == "Theo Asante" and p["date_of_birth"] == "2019-06-14" for p in new_patients)'),
            ("Has Theo's penicillin allergy been recorded?",
             'any(p["name"] == "Theo Asante" and p["allergies"] == ["penicillins"] for p in new_patients)'),
            ("Has Theo been booked into Dr. Jensen's 09:00 slot on 2026-04-10?",
             'any(a["slot_id"] == "D03-2026-04-10-0900" and a["status"] == "scheduled" and any('
             'p["patient_id"] == a["patient_id"] and p["name"] == "Theo Asante" for p in new_patients) '
             "for a in new_appts)"),
            ("Has Theo's insurance been recorded as Meridian HMO?",
             'any(p["name"] == "Theo Asante" and p["insurance_plan"] == "Meridian HMO" for p in new_patients)'),
        ],
        "solution": [
            ("register_patient", {"name": "Theo Asante", "date_of_birth": "2019-06-14", "phone": KWAME_PHONE,
                                  "email": "kwame.asante@mailbox.example", "insurance_plan": "Meridian HMO",
                                  "allergies": ["penicillins"]}),
            ("find_open_slots", {"specialty": "pediatrics", "date_from": "2026-04-10", "date_to": "2026-04-10"}),
            ("book_appointment", {"patient_id": "PT-1031", "slot_id": "D03-2026-04-10-0900",
                                  "reason": "ear pain"}),
        ],
    },
    {
        "title": "Morning close-out for general practice",
        "task": "Dr. Moreno's patients booked at 9:00 and 9:30 this morning never showed up - please record "
                "those. Her 10:00 patient, Kwame Asante, has just arrived: check him in.",
        "checklist": [
            ("Has A-5061 been recorded as a no-show?", appt("A-5061", "status") + ' == "no_show"'),
            ("Has A-5062 been recorded as a no-show?", appt("A-5062", "status") + ' == "no_show"'),
            ("Have the no-show counts of Tariq Aziz (PT-1012) and Fatima Zahra (PT-1017) each grown by one?",
             'all(final_state["patients"][p]["no_show_count"] == initial_state["patients"][p]["no_show_count"] + 1 '
             'for p in ("PT-1012", "PT-1017"))'),
            ("Has Kwame Asante's appointment A-5063 been checked in?", appt("A-5063", "status") + ' == "checked_in"'),
            ("Has the 10:30 appointment A-5064 stayed scheduled?", appt("A-5064", "status") + ' == "scheduled"',
             False),
        ],
        "solution": [
            ("get_doctor_day", {"doctor_id": "D01", "day": TODAY}),
            ("mark_no_show", {"appointment_id": "A-5061"}),
            ("mark_no_show", {"appointment_id": "A-5062"}),
            ("check_in", {"appointment_id": "A-5063"}),
        ],
    },
    {
        "title": "Move a visit that was already moved twice",
        "initial_state": TWICE_MOVED,
        "task": "This is Daniel Brooks. Please move my appointment with Dr. Rahman on April 8 to Wednesday, "
                "April 15 at 9:00. If the system won't let you move it, cancel it and book that slot as a new "
                "appointment instead. Don't touch my other appointments.",
        "checklist": [
            ("Has the April 8 appointment A-5112 been cancelled?", appt("A-5112", "status") + ' == "cancelled"'),
            ("Has Daniel (PT-1004) been booked into slot D06-2026-04-15-0900?",
             'any(a["patient_id"] == "PT-1004" and a["slot_id"] == "D06-2026-04-15-0900" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Have Daniel's appointments A-5091 and A-5113 stayed as they were?",
             unchanged('["appointments"]["A-5091"]') + " and " + unchanged('["appointments"]["A-5113"]'), False),
            ("Has the old slot D06-2026-04-08-0900 been reopened?",
             'final_state["slots"]["D06-2026-04-08-0900"]["status"] == "open"'),
        ],
        "solution": [
            ("find_patients", {"name": "Daniel Brooks"}),
            ("list_appointments", {"patient_id": "PT-1004", "upcoming_only": True}),
            ("cancel_appointment", {"appointment_id": "A-5112", "reason": "moved to 2026-04-15"}),
            ("book_appointment", {"patient_id": "PT-1004", "slot_id": "D06-2026-04-15-0900",
                                  "reason": "acne follow-up"}),
        ],
    },
    {
        "title": "Switch blood-pressure medication",
        "task": "Dr. Moreno has asked us to stop Beatrice Wong's lisinopril because of a persistent dry cough "
                "and replace it with losartan 50 mg once daily with 5 refills. She also suggested atorvastatin "
                "10 mg at night with 5 refills for Beatrice's cholesterol, if Beatrice can take it.",
        "checklist": [
            ("Has Beatrice's lisinopril prescription RX-7008 been discontinued?",
             'final_state["prescriptions"]["RX-7008"]["status"] == "discontinued"'),
            ("Has a reason been recorded for stopping RX-7008?",
             'bool(final_state["prescriptions"]["RX-7008"]["discontinue_reason"])'),
            ("Has an active losartan prescription with 5 refills from Dr. Moreno (D01) been issued to Beatrice?",
             'any(r["patient_id"] == "PT-1013" and r["medication"] == "losartan" and r["doctor_id"] == "D01" '
             'and r["refills_remaining"] == 5 and r["status"] == "active" for r in new_rx)'),
            ("Has no atorvastatin been prescribed to Beatrice, who is allergic to statins?",
             'not any(r["patient_id"] == "PT-1013" and r["medication"] == "atorvastatin" for r in new_rx)', False),
        ],
        "solution": [
            ("find_patients", {"name": "Beatrice Wong"}),
            ("list_prescriptions", {"patient_id": "PT-1013", "status": "active"}),
            ("discontinue_prescription", {"rx_id": "RX-7008", "reason": "persistent dry cough"}),
            ("prescribe", {"patient_id": "PT-1013", "doctor_id": "D01", "medication": "losartan",
                           "dosage": "50 mg once daily", "refills": 5}),
            ("get_patient", {"patient_id": "PT-1013"}),
        ],
    },
    {
        "title": "Dermatologist closed to new patients",
        "task": "Clara Dubois would like a dermatology appointment for a rash with Dr. Rahman on April 8 at "
                "9:30. If he can't take her, book her the first open slot with Dr. Nakamura on April 9 instead, "
                "as a video visit.",
        "checklist": [
            ("Has Clara (PT-1023) been booked into Dr. Nakamura's 10:00 slot on 2026-04-09?",
             'any(a["patient_id"] == "PT-1023" and a["slot_id"] == "D05-2026-04-09-1000" '
             'and a["status"] == "scheduled" for a in new_appts)'),
            ("Is Clara's new appointment a video visit?",
             'any(a["patient_id"] == "PT-1023" and a["visit_type"] == "video" for a in new_appts)'),
            ("Has no appointment been booked for Clara with Dr. Rahman (D06)?",
             'not any(a["patient_id"] == "PT-1023" and a["doctor_id"] == "D06" for a in new_appts)', False),
            ("Has Dr. Rahman's 09:30 slot on 2026-04-08 stayed open?",
             'final_state["slots"]["D06-2026-04-08-0930"]["status"] == "open"', False),
        ],
        "solution": [
            ("find_patients", {"name": "Clara Dubois"}),
            ("list_doctors", {"specialty": "dermatology"}),
            ("list_appointments", {"patient_id": "PT-1023", "doctor_id": "D06"}),
            ("find_open_slots", {"doctor_id": "D05", "date_from": "2026-04-09", "date_to": "2026-04-09"}),
            ("book_appointment", {"patient_id": "PT-1023", "slot_id": "D05-2026-04-09-1000", "reason": "rash",
                                  "visit_type": "video"}),
        ],
    },
]


# A plausible wrong solution per scenario title: replayed (failed calls ignored), it must leave at least
# one validator False, so the checklist is strict enough to tell it from the reference solution.
WRONG: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "Cancel a dermatology visit": [("cancel_appointment", {"appointment_id": "A-5100", "reason": "work conflict"})],
    "Refill a prescription": [("refill_prescription", {"rx_id": "RX-7025"})],
    "Referral and first neurology visit": [
        ("create_referral", {"patient_id": "PT-1001", "from_doctor_id": "D01", "specialty": "neurology",
                             "reason": "migraines"}),
        ("cancel_appointment", {"appointment_id": "A-5104", "reason": "clash"}),
        ("book_appointment", {"patient_id": "PT-1001", "slot_id": "D08-2026-04-13-0930", "reason": "migraines"}),
    ],
    "Cardiology with an expired referral": [
        ("cancel_appointment", {"appointment_id": "A-5120", "reason": "no longer needed"}),
        ("create_referral", {"patient_id": "PT-1015", "from_doctor_id": "D01", "specialty": "cardiology",
                             "reason": "post-ECG follow-up"}),
        ("book_appointment", {"patient_id": "PT-1015", "slot_id": "D04-2026-04-14-0900", "reason": "consult"}),
    ],
    "Doctor off sick: block the day and move patients": [
        ("block_doctor_day", {"doctor_id": "D01", "day": "2026-04-09", "reason": "doctor off sick"}),
        ("cancel_appointment", {"appointment_id": "A-5065", "reason": "doctor off sick"}),
        ("cancel_appointment", {"appointment_id": "A-5066", "reason": "doctor off sick"}),
        ("cancel_appointment", {"appointment_id": "A-5067", "reason": "doctor off sick"}),
    ],
    "Visit, notes and a safe prescription": [
        ("check_in", {"appointment_id": "A-5072"}),
        ("complete_appointment", {"appointment_id": "A-5072", "notes": "BP 150/95, start ACE inhibitor"}),
        ("prescribe", {"patient_id": "PT-1008", "doctor_id": "D02", "medication": "lisinopril",
                       "dosage": "10 mg once daily", "refills": 0}),
    ],
    "Register a child and book pediatrics": [
        ("register_patient", {"name": "Theo Asante", "date_of_birth": "2019-06-14", "phone": KWAME_PHONE,
                              "email": "kwame.asante@mailbox.example", "insurance_plan": "Meridian HMO"}),
        ("book_appointment", {"patient_id": "PT-1031", "slot_id": "D03-2026-04-10-0900", "reason": "ear pain"}),
    ],
    "Morning close-out for general practice": [
        ("mark_no_show", {"appointment_id": "A-5061"}),
        ("mark_no_show", {"appointment_id": "A-5063"}),
        ("check_in", {"appointment_id": "A-5062"}),
    ],
    "Move a visit that was already moved twice": [
        ("cancel_appointment", {"appointment_id": "A-5112", "reason": "cannot be moved"}),
    ],
    "Switch blood-pressure medication": [
        ("prescribe", {"patient_id": "PT-1013", "doctor_id": "D01", "medication": "losartan",
                       "dosage": "50 mg once daily", "refills": 5}),
    ],
    "Dermatologist closed to new patients": [
        ("book_appointment", {"patient_id": "PT-1023", "slot_id": "D05-2026-04-09-1000", "reason": "rash"}),
    ],
}


# Questions answered by looking things up; checked on what the agent did and said (authoring.read_only).
READ_ONLY: list[dict[str, Any]] = [
    {
        "title": "My upcoming appointments",
        "task": "Hello, this is Daniel Brooks, born 1998-08-27. I've lost track of my visits: which appointments "
                "do I have coming up, and with which doctor, on what day and at what time?",
        "solution": [("find_patients", {"name": "Daniel Brooks", "date_of_birth": "1998-08-27"}),
                     ("list_appointments", {"patient_id": "PT-1004", "upcoming_only": True}),
                     ("list_doctors", {})],
        "answer": "You have three upcoming appointments: today, 2026-04-07, at 10:00 with Dr. David Kaplan "
                  "(post-ECG follow-up); 2026-04-08 at 09:00 with Dr. Farid Rahman (mole check); and 2026-04-10 "
                  "at 09:30, also with Dr. Farid Rahman (eczema flare).",
        "checks": [
            ("Has the agent said Daniel has three upcoming appointments?", "says(transcript, 3)"),
            ("Has the agent given the visit with Dr. Kaplan on 2026-04-07 at 10:00?",
             "says(transcript, 'Kaplan', '2026-04-07', '10:00')"),
            ("Has the agent given the visit with Dr. Rahman on 2026-04-08 at 09:00?",
             "says(transcript, 'Rahman', '2026-04-08', '09:00')"),
            ("Has the agent given the visit on 2026-04-10 at 09:30?", "says(transcript, '2026-04-10', '09:30')"),
            ("Has the agent looked up Daniel's appointments?",
             "called(transcript, 'list_appointments', patient_id='PT-1004')"),
        ],
    },
    {
        "title": "A dermatologist who sees new patients by video",
        "task": "I'm new to the clinic and would like to see a dermatologist by video. Which dermatologist takes "
                "new patients and offers video visits, and when is their first open slot?",
        "solution": [("list_doctors", {"specialty": "dermatology", "accepting_new_patients": True,
                                       "offers_video": True}),
                     ("find_open_slots", {"doctor_id": "D05"})],
        "answer": "Dr. Emily Nakamura is the dermatologist who takes new patients and offers video visits. Her "
                  "first open slot is today, 2026-04-07, at 10:30.",
        "checks": [
            ("Has the agent named Dr. Emily Nakamura (and not Dr. Rahman, who takes no new patients)?",
             "says(transcript, 'Nakamura') and not_says(transcript, 'Rahman')"),
            ("Has the agent given her first open slot, 2026-04-07 at 10:30?",
             "says(transcript, '2026-04-07', '10:30')"),
            ("Has the agent looked up her open slots?", "called(transcript, 'find_open_slots', doctor_id='D05')"),
        ],
    },
]


if __name__ == "__main__":
    sys.exit(authoring.main(HERE, authoring.from_specs(ENV_ID, SPECS, STATE, NEW) + authoring.read_only(ENV_ID, READ_ONLY, STATE), WRONG))
