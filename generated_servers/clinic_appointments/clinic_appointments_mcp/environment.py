"""Outpatient clinic front desk: patients, doctors, schedules, appointments, referrals and prescriptions."""

from datetime import date, timedelta
from typing import Any, Dict, List, Literal, Optional, TypedDict


class PatientInfo(TypedDict):
    patient_id: str
    name: str
    date_of_birth: str
    phone: str
    email: str
    insurance_plan: Optional[str]
    allergies: List[str]  # drug classes or medication names, lowercase
    no_show_count: int
    status: str  # "active" or "inactive"


class DoctorInfo(TypedDict):
    doctor_id: str
    name: str
    specialty: str
    requires_referral: bool
    accepts_new_patients: bool
    offers_video: bool


class SlotInfo(TypedDict):
    slot_id: str
    doctor_id: str
    date: str
    start_time: str  # "HH:MM"
    duration_min: int
    status: str  # "open", "booked" or "blocked"
    block_reason: Optional[str]


class AppointmentInfo(TypedDict):
    appointment_id: str
    patient_id: str
    doctor_id: str
    slot_id: str
    date: str
    start_time: str
    visit_type: str  # "in-person" or "video"
    reason: str
    status: str  # "scheduled", "checked_in", "completed", "cancelled" or "no_show"
    booked_on: str
    referral_id: Optional[str]
    reschedule_count: int
    cancel_reason: Optional[str]
    late_cancellation: bool
    notes: Optional[str]


class ReferralInfo(TypedDict):
    referral_id: str
    patient_id: str
    from_doctor_id: str
    specialty: str
    reason: str
    issued_date: str
    expires_date: str
    status: str  # "active", "used" or "revoked"
    used_appointment_id: Optional[str]


class MedicationInfo(TypedDict):
    name: str
    drug_class: str
    controlled: bool
    max_refills: int


class PrescriptionInfo(TypedDict):
    rx_id: str
    patient_id: str
    doctor_id: str
    medication: str
    dosage: str
    issued_date: str
    refills_remaining: int
    last_filled: str
    status: str  # "active" or "discontinued"
    discontinue_reason: Optional[str]


MAX_UPCOMING = 3
MAX_RESCHEDULES = 2
REFERRAL_DAYS = 90
RX_VALID_DAYS = 365
PRIMARY_CARE = ("general practice", "pediatrics")


class ClinicAppointments:
    """Front desk and prescribing system of a multi-specialty outpatient clinic."""

    def __init__(self) -> None:
        # The clinic's current date ("YYYY-MM-DD").
        self.today: str = "2026-04-07"
        # Patients by patient id.
        self.patients: Dict[str, PatientInfo] = {}
        # Doctors by doctor id.
        self.doctors: Dict[str, DoctorInfo] = {}
        # Schedule slots by slot id ("<doctor>-<date>-<HHMM>").
        self.slots: Dict[str, SlotInfo] = {}
        # Appointments by appointment id.
        self.appointments: Dict[str, AppointmentInfo] = {}
        # Referrals to specialists by referral id.
        self.referrals: Dict[str, ReferralInfo] = {}
        # The clinic formulary: medications by lowercase name.
        self.medications: Dict[str, MedicationInfo] = {}
        # Prescriptions by prescription id.
        self.prescriptions: Dict[str, PrescriptionInfo] = {}

    # ----------------------------------------------------------------- helpers

    def _next_id(self, prefix: str, existing: Dict[str, Any], start: int) -> str:
        numbers = [int(key[len(prefix):]) for key in existing if key[len(prefix):].isdigit()]
        return f"{prefix}{max([*numbers, start - 1]) + 1}"

    def _age(self, date_of_birth: str) -> int:
        born, now = date.fromisoformat(date_of_birth), date.fromisoformat(self.today)
        return now.year - born.year - ((now.month, now.day) < (born.month, born.day))

    def _upcoming(self, patient_id: str) -> List[AppointmentInfo]:
        return [a for a in self.appointments.values() if a["patient_id"] == patient_id
                and a["status"] in ("scheduled", "checked_in") and a["date"] >= self.today]

    def _is_established(self, patient_id: str, doctor_id: str) -> bool:
        return any(a["patient_id"] == patient_id and a["doctor_id"] == doctor_id and a["status"] == "completed"
                   for a in self.appointments.values())

    def _usable_referral(self, patient_id: str, specialty: str) -> Optional[ReferralInfo]:
        usable = [r for r in self.referrals.values() if r["patient_id"] == patient_id and r["status"] == "active"
                  and r["specialty"] == specialty and r["expires_date"] >= self.today]
        return min(usable, key=lambda r: r["issued_date"]) if usable else None

    def _slot_problem(self, patient_id: str, slot: SlotInfo, ignore_appointment: Optional[str]) -> Optional[str]:
        """Why the patient cannot take this slot (None when they can)."""
        if slot["status"] != "open":
            return f"Slot {slot['slot_id']} is {slot['status']}, not open."
        if slot["date"] < self.today:
            return f"Slot {slot['slot_id']} is in the past."
        for appt in self._upcoming(patient_id):
            if appt["appointment_id"] == ignore_appointment:
                continue
            if appt["date"] == slot["date"] and appt["start_time"] == slot["start_time"]:
                return (f"Patient {patient_id} already has appointment {appt['appointment_id']} on "
                        f"{slot['date']} at {slot['start_time']}; no double booking.")
            if appt["date"] == slot["date"] and appt["doctor_id"] == slot["doctor_id"]:
                return (f"Patient {patient_id} already sees {slot['doctor_id']} on {slot['date']} "
                        f"(appointment {appt['appointment_id']}).")
        return None

    def _release_referral(self, appt: AppointmentInfo) -> None:
        referral = self.referrals.get(appt["referral_id"] or "")
        if referral is not None and referral["status"] == "used":
            referral["status"] = "active"
            referral["used_appointment_id"] = None

    # ----------------------------------------------------------------- queries

    def get_patient(self, patient_id: str) -> Dict[str, Any]:
        """Get a patient's record (contact, insurance, allergies, no-show count).

        Args:
            patient_id: Patient id, e.g. "PT-1004".

        Returns:
            {"success": True, "data": patient record} or {"success": False, "error": ...}.

        Constraints:
            Read-only; the id must exist.
        """
        patient = self.patients.get(patient_id)
        if patient is None:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        return {"success": True, "data": patient}

    def find_patients(self, name: Optional[str] = None, date_of_birth: Optional[str] = None,
                      phone: Optional[str] = None) -> Dict[str, Any]:
        """Find patients by part of the name, exact date of birth and/or exact phone number.

        Args:
            name: Text that must appear in the name, ignoring case.
            date_of_birth: Exact date of birth (YYYY-MM-DD).
            phone: Exact phone number.

        Returns:
            {"success": True, "data": [patient records]} (possibly empty).

        Constraints:
            Give at least one criterion; all given criteria must match.
        """
        if not name and not date_of_birth and not phone:
            return {"success": False, "error": "Give a name, date_of_birth or phone to search for."}
        found = [p for p in self.patients.values()
                 if (not name or name.lower() in p["name"].lower())
                 and (not date_of_birth or p["date_of_birth"] == date_of_birth)
                 and (not phone or p["phone"] == phone)]
        return {"success": True, "data": found}

    def list_doctors(self, specialty: Optional[str] = None, accepting_new_patients: Optional[bool] = None,
                     offers_video: Optional[bool] = None) -> Dict[str, Any]:
        """List the clinic's doctors, optionally by specialty, new-patient and video availability.

        Args:
            specialty: Exact specialty, e.g. "cardiology", ignoring case.
            accepting_new_patients: Only doctors that do (True) or do not (False) take new patients.
            offers_video: Only doctors that do (True) or do not (False) offer video visits.

        Returns:
            {"success": True, "data": [doctor records]} sorted by doctor id.

        Constraints:
            Read-only.
        """
        found = [d for d in self.doctors.values()
                 if (not specialty or d["specialty"].lower() == specialty.lower())
                 and (accepting_new_patients is None or d["accepts_new_patients"] == accepting_new_patients)
                 and (offers_video is None or d["offers_video"] == offers_video)]
        return {"success": True, "data": sorted(found, key=lambda d: d["doctor_id"])}

    def find_open_slots(self, doctor_id: Optional[str] = None, specialty: Optional[str] = None,
                        date_from: Optional[str] = None, date_to: Optional[str] = None) -> Dict[str, Any]:
        """Find open slots from today on, by doctor or specialty and date range.

        Args:
            doctor_id: Only this doctor's slots.
            specialty: Only slots of doctors with this specialty.
            date_from: First date to include (YYYY-MM-DD); today when omitted or earlier.
            date_to: Last date to include (YYYY-MM-DD).

        Returns:
            {"success": True, "data": [slot records with "doctor_name"]} sorted by date and time.

        Constraints:
            Read-only; past slots are never listed.
        """
        if doctor_id is not None and doctor_id not in self.doctors:
            return {"success": False, "error": f"No doctor with id '{doctor_id}'."}
        start = max(date_from or self.today, self.today)
        found = []
        for slot in self.slots.values():
            doctor = self.doctors.get(slot["doctor_id"])
            if (slot["status"] == "open" and slot["date"] >= start and (not date_to or slot["date"] <= date_to)
                    and (doctor_id is None or slot["doctor_id"] == doctor_id)
                    and (not specialty or (doctor is not None and doctor["specialty"].lower() == specialty.lower()))):
                found.append(dict(slot, doctor_name=doctor["name"] if doctor else ""))
        return {"success": True, "data": sorted(found, key=lambda s: (s["date"], s["start_time"], s["doctor_id"]))}

    def get_doctor_day(self, doctor_id: str, day: str) -> Dict[str, Any]:
        """Show one doctor's slots on one day, with the appointment in each booked slot.

        Args:
            doctor_id: Doctor id, e.g. "D04".
            day: Date (YYYY-MM-DD).

        Returns:
            {"success": True, "data": [{"slot": slot record, "appointment": appointment record | None}]}.

        Constraints:
            Read-only; the doctor must exist.
        """
        if doctor_id not in self.doctors:
            return {"success": False, "error": f"No doctor with id '{doctor_id}'."}
        rows = []
        for slot in sorted(self.slots.values(), key=lambda s: s["start_time"]):
            if slot["doctor_id"] == doctor_id and slot["date"] == day:
                appt = next((a for a in self.appointments.values() if a["slot_id"] == slot["slot_id"]
                             and a["status"] != "cancelled"), None)
                rows.append({"slot": slot, "appointment": appt})
        return {"success": True, "data": rows}

    def get_appointment(self, appointment_id: str) -> Dict[str, Any]:
        """Get one appointment.

        Args:
            appointment_id: Appointment id, e.g. "A-5012".

        Returns:
            {"success": True, "data": appointment record} or {"success": False, "error": ...}.

        Constraints:
            Read-only; the id must exist.
        """
        appt = self.appointments.get(appointment_id)
        if appt is None:
            return {"success": False, "error": f"No appointment with id '{appointment_id}'."}
        return {"success": True, "data": appt}

    def list_appointments(self, patient_id: Optional[str] = None, doctor_id: Optional[str] = None,
                          status: Optional[Literal["scheduled", "checked_in", "completed", "cancelled",
                                                   "no_show"]] = None,
                          day: Optional[str] = None, upcoming_only: bool = False) -> Dict[str, Any]:
        """List appointments by patient, doctor, status and date.

        Args:
            patient_id: Only this patient's appointments.
            doctor_id: Only this doctor's appointments.
            status: Only appointments with this status.
            day: Only appointments on this date (YYYY-MM-DD).
            upcoming_only: Only appointments dated today or later.

        Returns:
            {"success": True, "data": [appointment records]} sorted by date and time.

        Constraints:
            Read-only.
        """
        found = [a for a in self.appointments.values()
                 if (patient_id is None or a["patient_id"] == patient_id)
                 and (doctor_id is None or a["doctor_id"] == doctor_id)
                 and (status is None or a["status"] == status)
                 and (day is None or a["date"] == day)
                 and (not upcoming_only or a["date"] >= self.today)]
        return {"success": True, "data": sorted(found, key=lambda a: (a["date"], a["start_time"]))}

    def list_referrals(self, patient_id: str, status: Optional[Literal["active", "used", "revoked"]] = None
                       ) -> Dict[str, Any]:
        """List a patient's referrals, with whether each is still valid today.

        Args:
            patient_id: Patient id.
            status: Only referrals with this status.

        Returns:
            {"success": True, "data": [referral records plus "valid_today": bool]}.

        Constraints:
            Read-only; a referral is valid when active and not past its expiry date.
        """
        if patient_id not in self.patients:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        found = [dict(r, valid_today=r["status"] == "active" and r["expires_date"] >= self.today)
                 for r in self.referrals.values()
                 if r["patient_id"] == patient_id and (status is None or r["status"] == status)]
        return {"success": True, "data": sorted(found, key=lambda r: r["referral_id"])}

    def list_prescriptions(self, patient_id: str, status: Optional[Literal["active", "discontinued"]] = None
                           ) -> Dict[str, Any]:
        """List a patient's prescriptions.

        Args:
            patient_id: Patient id.
            status: Only prescriptions with this status.

        Returns:
            {"success": True, "data": [prescription records]} sorted by id.

        Constraints:
            Read-only.
        """
        if patient_id not in self.patients:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        found = [rx for rx in self.prescriptions.values()
                 if rx["patient_id"] == patient_id and (status is None or rx["status"] == status)]
        return {"success": True, "data": sorted(found, key=lambda rx: rx["rx_id"])}

    def get_medication(self, name: str) -> Dict[str, Any]:
        """Look up a medication in the clinic formulary (class, controlled status, refill limit).

        Args:
            name: Medication name, ignoring case, e.g. "amoxicillin".

        Returns:
            {"success": True, "data": medication record}.

        Constraints:
            Read-only; only formulary medications can be prescribed.
        """
        med = self.medications.get(name.lower())
        if med is None:
            return {"success": False, "error": f"'{name}' is not in the clinic formulary."}
        return {"success": True, "data": med}

    # ----------------------------------------------------------- state changes

    def register_patient(self, name: str, date_of_birth: str, phone: str, email: str,
                         insurance_plan: Optional[str] = None, allergies: Optional[List[str]] = None
                         ) -> Dict[str, Any]:
        """Register a new patient.

        Args:
            name: Full name.
            date_of_birth: Date of birth (YYYY-MM-DD), not in the future.
            phone: Phone number.
            email: Email address.
            insurance_plan: Insurance plan name, if any.
            allergies: Known drug allergies (drug classes or medication names).

        Returns:
            {"success": True, "message": ..., "data": new patient record}.

        Constraints:
            A patient with the same name and date of birth must not already exist.
        """
        try:
            born = date.fromisoformat(date_of_birth)
        except ValueError:
            return {"success": False, "error": f"'{date_of_birth}' is not a date in YYYY-MM-DD form."}
        if born.isoformat() > self.today:
            return {"success": False, "error": "Date of birth cannot be in the future."}
        for p in self.patients.values():
            if p["name"].lower() == name.lower() and p["date_of_birth"] == date_of_birth:
                return {"success": False, "error": f"{name} born {date_of_birth} is already patient {p['patient_id']}."}
        patient_id = self._next_id("PT-", self.patients, 1001)
        patient: PatientInfo = {
            "patient_id": patient_id, "name": name, "date_of_birth": date_of_birth, "phone": phone,
            "email": email, "insurance_plan": insurance_plan,
            "allergies": sorted({a.strip().lower() for a in allergies or [] if a.strip()}),
            "no_show_count": 0, "status": "active",
        }
        self.patients[patient_id] = patient
        return {"success": True, "message": f"Registered {name} as {patient_id}.", "data": patient}

    def update_patient_contact(self, patient_id: str, phone: Optional[str] = None, email: Optional[str] = None,
                               insurance_plan: Optional[str] = None) -> Dict[str, Any]:
        """Update a patient's phone, email and/or insurance plan.

        Args:
            patient_id: Patient id.
            phone: New phone number.
            email: New email address.
            insurance_plan: New insurance plan name.

        Returns:
            {"success": True, "message": ..., "data": updated patient}.

        Constraints:
            Give at least one field.
        """
        patient = self.patients.get(patient_id)
        if patient is None:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        if not phone and not email and not insurance_plan:
            return {"success": False, "error": "Give a phone, email or insurance_plan to change."}
        if email and "@" not in email:
            return {"success": False, "error": f"'{email}' is not a valid email address."}
        if phone:
            patient["phone"] = phone
        if email:
            patient["email"] = email
        if insurance_plan:
            patient["insurance_plan"] = insurance_plan
        return {"success": True, "message": f"Patient {patient_id} updated.", "data": patient}

    def book_appointment(self, patient_id: str, slot_id: str, reason: str,
                         visit_type: Literal["in-person", "video"] = "in-person") -> Dict[str, Any]:
        """Book an open slot for a patient.

        Args:
            patient_id: Patient to book.
            slot_id: Open slot, e.g. "D04-2026-04-09-0930".
            reason: Reason for the visit.
            visit_type: "in-person" or "video" (only with doctors who offer video).

        Returns:
            {"success": True, "message": ..., "data": new appointment record}.

        Constraints:
            Active patients only; the slot must be open and not in the past; no two appointments at the same
            time or with the same doctor on the same day; at most 3 upcoming appointments per patient;
            doctors closed to new patients only see patients they have seen before; pediatrics is for
            patients under 18; cardiology, neurology and orthopedics need a valid referral, which is used up.
        """
        patient = self.patients.get(patient_id)
        if patient is None:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        if patient["status"] != "active":
            return {"success": False, "error": f"Patient {patient_id} is inactive; reactivate the record first."}
        slot = self.slots.get(slot_id)
        if slot is None:
            return {"success": False, "error": f"No slot with id '{slot_id}'."}
        doctor = self.doctors[slot["doctor_id"]]
        problem = self._slot_problem(patient_id, slot, None)
        if problem:
            return {"success": False, "error": problem}
        if len(self._upcoming(patient_id)) >= MAX_UPCOMING:
            return {"success": False, "error": f"Patient {patient_id} already has {MAX_UPCOMING} upcoming "
                                               "appointments, the most allowed."}
        if not doctor["accepts_new_patients"] and not self._is_established(patient_id, doctor["doctor_id"]):
            return {"success": False, "error": f"{doctor['name']} is not taking new patients and has not seen "
                                               f"patient {patient_id} before."}
        if doctor["specialty"] == "pediatrics" and self._age(patient["date_of_birth"]) >= 18:
            return {"success": False, "error": "Pediatrics only sees patients under 18."}
        if visit_type == "video" and not doctor["offers_video"]:
            return {"success": False, "error": f"{doctor['name']} does not offer video visits."}
        referral = None
        if doctor["requires_referral"]:
            referral = self._usable_referral(patient_id, doctor["specialty"])
            if referral is None:
                return {"success": False, "error": f"{doctor['specialty'].capitalize()} needs a valid referral and "
                                                   f"patient {patient_id} has none; a primary-care doctor must "
                                                   "create one first."}
        appt_id = self._next_id("A-", self.appointments, 5001)
        appt: AppointmentInfo = {
            "appointment_id": appt_id, "patient_id": patient_id, "doctor_id": doctor["doctor_id"],
            "slot_id": slot_id, "date": slot["date"], "start_time": slot["start_time"], "visit_type": visit_type,
            "reason": reason, "status": "scheduled", "booked_on": self.today,
            "referral_id": referral["referral_id"] if referral else None, "reschedule_count": 0,
            "cancel_reason": None, "late_cancellation": False, "notes": None,
        }
        if referral is not None:
            referral["status"] = "used"
            referral["used_appointment_id"] = appt_id
        slot["status"] = "booked"
        self.appointments[appt_id] = appt
        return {"success": True, "message": f"Booked {appt_id} with {doctor['name']} on {slot['date']} at "
                                            f"{slot['start_time']}.", "data": appt}

    def cancel_appointment(self, appointment_id: str, reason: str) -> Dict[str, Any]:
        """Cancel a scheduled appointment; its slot reopens and any referral it used becomes active again.

        Args:
            appointment_id: Scheduled appointment.
            reason: Why it is cancelled.

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only scheduled appointments dated today or later; a cancellation on the appointment day is
            recorded as a late cancellation.
        """
        appt = self.appointments.get(appointment_id)
        if appt is None:
            return {"success": False, "error": f"No appointment with id '{appointment_id}'."}
        if appt["status"] != "scheduled":
            return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}; only scheduled "
                                               "appointments can be cancelled."}
        if appt["date"] < self.today:
            return {"success": False, "error": f"Appointment {appointment_id} was on {appt['date']}; record it as "
                                               "a no-show instead."}
        appt["status"] = "cancelled"
        appt["cancel_reason"] = reason
        appt["late_cancellation"] = appt["date"] == self.today
        slot = self.slots.get(appt["slot_id"])
        if slot is not None and slot["status"] == "booked":
            slot["status"] = "open"
        self._release_referral(appt)
        late = " (late cancellation)" if appt["late_cancellation"] else ""
        return {"success": True, "message": f"Appointment {appointment_id} cancelled{late}."}

    def reschedule_appointment(self, appointment_id: str, new_slot_id: str) -> Dict[str, Any]:
        """Move a scheduled appointment to another open slot of the same doctor.

        Args:
            appointment_id: Scheduled appointment.
            new_slot_id: Open slot of the same doctor.

        Returns:
            {"success": True, "message": ..., "data": updated appointment}.

        Constraints:
            Same doctor only; the new slot must be open, not in the past and not clash with the patient's
            other appointments; an appointment can be rescheduled at most twice.
        """
        appt = self.appointments.get(appointment_id)
        if appt is None:
            return {"success": False, "error": f"No appointment with id '{appointment_id}'."}
        if appt["status"] != "scheduled" or appt["date"] < self.today:
            return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']} on {appt['date']}; "
                                               "only upcoming scheduled appointments can be moved."}
        if appt["reschedule_count"] >= MAX_RESCHEDULES:
            return {"success": False, "error": f"Appointment {appointment_id} was already rescheduled "
                                               f"{MAX_RESCHEDULES} times; cancel it and book a new one."}
        slot = self.slots.get(new_slot_id)
        if slot is None:
            return {"success": False, "error": f"No slot with id '{new_slot_id}'."}
        if slot["doctor_id"] != appt["doctor_id"]:
            return {"success": False, "error": f"Slot {new_slot_id} belongs to {slot['doctor_id']}, not "
                                               f"{appt['doctor_id']}; rescheduling keeps the same doctor."}
        problem = self._slot_problem(appt["patient_id"], slot, appointment_id)
        if problem:
            return {"success": False, "error": problem}
        old = self.slots.get(appt["slot_id"])
        if old is not None and old["status"] == "booked":
            old["status"] = "open"
        slot["status"] = "booked"
        appt.update(slot_id=new_slot_id, date=slot["date"], start_time=slot["start_time"],
                    reschedule_count=appt["reschedule_count"] + 1)
        return {"success": True, "message": f"Appointment {appointment_id} moved to {slot['date']} "
                                            f"{slot['start_time']}.", "data": appt}

    def check_in(self, appointment_id: str) -> Dict[str, Any]:
        """Check a patient in for today's appointment.

        Args:
            appointment_id: Scheduled appointment dated today.

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only scheduled appointments dated today.
        """
        appt = self.appointments.get(appointment_id)
        if appt is None:
            return {"success": False, "error": f"No appointment with id '{appointment_id}'."}
        if appt["status"] != "scheduled":
            return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}."}
        if appt["date"] != self.today:
            return {"success": False, "error": f"Appointment {appointment_id} is on {appt['date']}, not today."}
        appt["status"] = "checked_in"
        return {"success": True, "message": f"Patient {appt['patient_id']} checked in for {appointment_id}."}

    def complete_appointment(self, appointment_id: str, notes: str) -> Dict[str, Any]:
        """Close a checked-in appointment with the doctor's visit notes.

        Args:
            appointment_id: Checked-in appointment.
            notes: Visit summary.

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only checked-in appointments can be completed.
        """
        appt = self.appointments.get(appointment_id)
        if appt is None:
            return {"success": False, "error": f"No appointment with id '{appointment_id}'."}
        if appt["status"] != "checked_in":
            return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}; check the "
                                               "patient in first."}
        appt["status"] = "completed"
        appt["notes"] = notes
        return {"success": True, "message": f"Appointment {appointment_id} completed."}

    def mark_no_show(self, appointment_id: str) -> Dict[str, Any]:
        """Record that the patient did not come to a scheduled appointment of today or earlier.

        Args:
            appointment_id: Scheduled appointment dated today or earlier.

        Returns:
            {"success": True, "message": ..., "data": {"no_show_count": int}}.

        Constraints:
            Only scheduled appointments that are not in the future; the patient's no-show count grows by
            one and any referral the appointment used stays used.
        """
        appt = self.appointments.get(appointment_id)
        if appt is None:
            return {"success": False, "error": f"No appointment with id '{appointment_id}'."}
        if appt["status"] != "scheduled":
            return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}."}
        if appt["date"] > self.today:
            return {"success": False, "error": f"Appointment {appointment_id} is on {appt['date']}, in the future."}
        appt["status"] = "no_show"
        patient = self.patients[appt["patient_id"]]
        patient["no_show_count"] += 1
        return {"success": True, "message": f"No-show recorded for {appointment_id}.",
                "data": {"no_show_count": patient["no_show_count"]}}

    def block_doctor_day(self, doctor_id: str, day: str, reason: str) -> Dict[str, Any]:
        """Block a doctor's whole day (bulk), e.g. for sickness or training; nothing new can be booked.

        Args:
            doctor_id: Doctor id.
            day: Date (YYYY-MM-DD), today or later.
            reason: Why the day is blocked.

        Returns:
            {"success": True, "message": ..., "data": {"blocked": [slot ids], "still_booked": [appointment ids]}}.

        Constraints:
            Appointments already booked that day are kept and listed: reschedule or cancel them
            separately; their slots stay blocked once emptied.
        """
        if doctor_id not in self.doctors:
            return {"success": False, "error": f"No doctor with id '{doctor_id}'."}
        if day < self.today:
            return {"success": False, "error": f"{day} is in the past."}
        if not any(s["doctor_id"] == doctor_id and s["date"] == day for s in self.slots.values()):
            return {"success": False, "error": f"{doctor_id} has no slots on {day}."}
        blocked = []
        for slot in self.slots.values():
            if slot["doctor_id"] == doctor_id and slot["date"] == day and slot["status"] != "blocked":
                slot["status"] = "blocked"
                slot["block_reason"] = reason
                blocked.append(slot["slot_id"])
        booked = sorted(a["appointment_id"] for a in self.appointments.values()
                        if a["doctor_id"] == doctor_id and a["date"] == day and a["status"] in ("scheduled", "checked_in"))
        return {"success": True, "message": f"Blocked {len(blocked)} slot(s); {len(booked)} appointment(s) still "
                                            "need to be moved or cancelled.",
                "data": {"blocked": sorted(blocked), "still_booked": booked}}

    def unblock_doctor_day(self, doctor_id: str, day: str) -> Dict[str, Any]:
        """Reopen a doctor's blocked day (undo of block_doctor_day).

        Args:
            doctor_id: Doctor id.
            day: Date (YYYY-MM-DD), today or later.

        Returns:
            {"success": True, "message": ..., "data": {"reopened": [slot ids]}}.

        Constraints:
            Only blocked slots on that day, and there must be at least one; a slot that still holds an
            appointment becomes booked again, the others open.
        """
        if doctor_id not in self.doctors:
            return {"success": False, "error": f"No doctor with id '{doctor_id}'."}
        if day < self.today:
            return {"success": False, "error": f"{day} is in the past."}
        reopened = []
        for slot in self.slots.values():
            if slot["doctor_id"] == doctor_id and slot["date"] == day and slot["status"] == "blocked":
                taken = any(a["slot_id"] == slot["slot_id"] and a["status"] in ("scheduled", "checked_in")
                            for a in self.appointments.values())
                slot["status"] = "booked" if taken else "open"
                slot["block_reason"] = None
                reopened.append(slot["slot_id"])
        if not reopened:
            return {"success": False, "error": f"{doctor_id} has no blocked slots on {day}."}
        return {"success": True, "message": f"Reopened {len(reopened)} slot(s).", "data": {"reopened": sorted(reopened)}}

    def create_referral(self, patient_id: str, from_doctor_id: str,
                        specialty: Literal["cardiology", "dermatology", "neurology", "orthopedics"],
                        reason: str) -> Dict[str, Any]:
        """Refer a patient to a specialty; the referral is valid for 90 days.

        Args:
            patient_id: Patient to refer.
            from_doctor_id: Referring primary-care doctor (general practice or pediatrics).
            specialty: Specialty referred to.
            reason: Clinical reason for the referral.

        Returns:
            {"success": True, "message": ..., "data": new referral record}.

        Constraints:
            Only primary-care doctors refer, and only patients they have seen (a completed appointment);
            one valid referral per patient and specialty.
        """
        patient = self.patients.get(patient_id)
        if patient is None:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        doctor = self.doctors.get(from_doctor_id)
        if doctor is None:
            return {"success": False, "error": f"No doctor with id '{from_doctor_id}'."}
        if doctor["specialty"] not in PRIMARY_CARE:
            return {"success": False, "error": f"{doctor['name']} is a {doctor['specialty']} specialist; only "
                                               "primary-care doctors can refer."}
        if not self._is_established(patient_id, from_doctor_id):
            return {"success": False, "error": f"{doctor['name']} has not seen patient {patient_id}; a referral "
                                               "needs a completed visit with the referring doctor."}
        if self._usable_referral(patient_id, specialty) is not None:
            return {"success": False, "error": f"Patient {patient_id} already has a valid {specialty} referral."}
        referral_id = self._next_id("RF-", self.referrals, 301)
        referral: ReferralInfo = {
            "referral_id": referral_id, "patient_id": patient_id, "from_doctor_id": from_doctor_id,
            "specialty": specialty, "reason": reason, "issued_date": self.today,
            "expires_date": (date.fromisoformat(self.today) + timedelta(days=REFERRAL_DAYS)).isoformat(),
            "status": "active", "used_appointment_id": None,
        }
        self.referrals[referral_id] = referral
        return {"success": True, "message": f"Referral {referral_id} to {specialty} created.", "data": referral}

    def prescribe(self, patient_id: str, doctor_id: str, medication: str, dosage: str, refills: int = 0
                  ) -> Dict[str, Any]:
        """Issue a prescription from the formulary.

        Args:
            patient_id: Patient.
            doctor_id: Prescribing doctor.
            medication: Formulary medication name, ignoring case.
            dosage: Dose and frequency, e.g. "500 mg three times daily".
            refills: Refills allowed after the first fill.

        Returns:
            {"success": True, "message": ..., "data": new prescription record}.

        Constraints:
            The doctor must have seen the patient (a completed appointment); never a medication the patient
            is allergic to (by name or drug class); refills within the medication's limit (controlled
            medications: none); no second active prescription of the same medication.
        """
        patient = self.patients.get(patient_id)
        if patient is None:
            return {"success": False, "error": f"No patient with id '{patient_id}'."}
        if doctor_id not in self.doctors:
            return {"success": False, "error": f"No doctor with id '{doctor_id}'."}
        med = self.medications.get(medication.lower())
        if med is None:
            return {"success": False, "error": f"'{medication}' is not in the clinic formulary."}
        if not self._is_established(patient_id, doctor_id):
            return {"success": False, "error": f"Doctor {doctor_id} has no completed visit with patient {patient_id}."}
        allergy = next((a for a in patient["allergies"] if a in (med["name"], med["drug_class"])), None)
        if allergy is not None:
            return {"success": False, "error": f"Patient {patient_id} is allergic to {allergy}; "
                                               f"{med['name']} ({med['drug_class']}) cannot be prescribed."}
        if refills < 0 or refills > med["max_refills"]:
            return {"success": False, "error": f"{med['name']} allows 0 to {med['max_refills']} refills."}
        for rx in self.prescriptions.values():
            if rx["patient_id"] == patient_id and rx["medication"] == med["name"] and rx["status"] == "active":
                return {"success": False, "error": f"Patient already has active prescription {rx['rx_id']} for "
                                                   f"{med['name']}; refill or discontinue it."}
        rx_id = self._next_id("RX-", self.prescriptions, 7001)
        record: PrescriptionInfo = {
            "rx_id": rx_id, "patient_id": patient_id, "doctor_id": doctor_id, "medication": med["name"],
            "dosage": dosage, "issued_date": self.today, "refills_remaining": refills, "last_filled": self.today,
            "status": "active", "discontinue_reason": None,
        }
        self.prescriptions[rx_id] = record
        return {"success": True, "message": f"Prescription {rx_id} for {med['name']} issued.", "data": record}

    def refill_prescription(self, rx_id: str) -> Dict[str, Any]:
        """Fill an active prescription again, using one refill.

        Args:
            rx_id: Prescription id, e.g. "RX-7003".

        Returns:
            {"success": True, "message": ..., "data": {"refills_remaining": int}}.

        Constraints:
            Active prescriptions with refills left, issued within the last 365 days, and not already filled
            today.
        """
        rx = self.prescriptions.get(rx_id)
        if rx is None:
            return {"success": False, "error": f"No prescription with id '{rx_id}'."}
        if rx["status"] != "active":
            return {"success": False, "error": f"Prescription {rx_id} is {rx['status']}."}
        expires = date.fromisoformat(rx["issued_date"]) + timedelta(days=RX_VALID_DAYS)
        if expires.isoformat() < self.today:
            return {"success": False, "error": f"Prescription {rx_id} expired on {expires.isoformat()}; the "
                                               "doctor must issue a new one."}
        if rx["refills_remaining"] < 1:
            return {"success": False, "error": f"Prescription {rx_id} has no refills left; the doctor must "
                                               "issue a new one."}
        if rx["last_filled"] == self.today:
            return {"success": False, "error": f"Prescription {rx_id} was already filled today."}
        rx["refills_remaining"] -= 1
        rx["last_filled"] = self.today
        return {"success": True, "message": f"Prescription {rx_id} refilled.",
                "data": {"refills_remaining": rx["refills_remaining"]}}

    def discontinue_prescription(self, rx_id: str, reason: str) -> Dict[str, Any]:
        """Stop an active prescription.

        Args:
            rx_id: Prescription id.
            reason: Why it is stopped.

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only active prescriptions.
        """
        rx = self.prescriptions.get(rx_id)
        if rx is None:
            return {"success": False, "error": f"No prescription with id '{rx_id}'."}
        if rx["status"] != "active":
            return {"success": False, "error": f"Prescription {rx_id} is already {rx['status']}."}
        rx["status"] = "discontinued"
        rx["discontinue_reason"] = reason
        return {"success": True, "message": f"Prescription {rx_id} discontinued."}
