from typing import Dict, List, TypedDict


class DoctorInfo(TypedDict):
    id: str
    name: str
    specialization: str
    location: str
    availability: List[str]


class LocationInfo(TypedDict):
    location_id: str
    name: str
    address: str
    city: str
    state: str
    zip_code: str
    phone_number: str


class AppointmentInfo(TypedDict):
    id: str
    patient_id: str
    doctor_id: str
    location_id: str
    date: str
    time: str
    status: str


class HospitalAppointmentScheduler:
    def __init__(self) -> None:
        # rule: a doctor must be available at the specified location for the appointment to be scheduled
        # rule: an appointment must be scheduled for a valid date and time
        # rule: an appointment must be scheduled for a patient who is registered with the system
        # Doctor records by id: a licensed healthcare professional who specializes in a particular area of medicine, such as cardiology
        self.doctors: Dict[str, DoctorInfo] = {}
        # Location records by location_id: a physical location where a healthcare facility is located, such as a hospital or clinic
        self.locations: Dict[str, LocationInfo] = {}
        # Appointment records by id: a scheduled appointment between a patient and a healthcare professional, including the date, time, and location of the appointment
        self.appointments: Dict[str, AppointmentInfo] = {}

    def get_doctor(self, doctor_id: str) -> dict:
        """
        Get a doctor by id

        Args:
            doctor_id (str): The id of the doctor to retrieve

        Returns:
            dict: A dictionary containing the doctor's information, including their id, name, specialization, location, and availability
        """
        if doctor_id in self.doctors:
            return {"success": True, "data": self.doctors[doctor_id]}
        else:
            return {"success": False, "error": "Doctor not found"}

    def get_appointments(self, patient_id: str) -> dict:
        """
        Get all appointments for a patient.

        Args:
            patient_id (str): The ID of the patient for whom to retrieve appointments.

        Returns:
            dict: A dictionary containing the success status and the list of appointments for the patient.
        """
        found = [a for a in self.appointments.values() if a["patient_id"] == patient_id]
        if not found:
            return {"success": False, "error": "Patient not found"}
        return {"success": True, "data": found}

    def get_available_doctors(self, location_id: str) -> dict:
        """
        Get all available doctors for a location.

        Args:
            location_id (str): The ID of the location for which to get available doctors.

        Returns:
            dict: A dictionary containing the success status and the list of available doctors.
        """
        if location_id not in self.locations:
            return {"success": False, "error": "Location not found"}

        name = self.locations[location_id]["name"]
        available_doctors = [doctor for doctor in self.doctors.values() if doctor["location"] == name and doctor["availability"]]

        if not available_doctors:
            return {"success": False, "error": "No available doctors found"}

        return {"success": True, "data": available_doctors}

    def get_appointment_status(self, appointment_id: str) -> dict:
        """
        Get the status of an appointment.

        Args:
            appointment_id (str): The unique identifier of the appointment.

        Returns:
            dict: A dictionary with the following keys:
                - success (bool): True if the appointment exists, False otherwise.
                - data (str): The status of the appointment, or None if the appointment does not exist.
                - message (str): A success message if the appointment exists, an error message if the appointment does not exist.
        """
        if appointment_id in self.appointments:
            return {"success": True, "data": self.appointments[appointment_id]["status"], "message": "Appointment status retrieved successfully"}
        else:
            return {"success": False, "data": None, "message": "Appointment not found"}

    def schedule_appointment(self, patient_id: str, doctor_id: str, location_id: str, date: str, time: str) -> dict:
        """
        Schedule a new appointment.

        Args:
            patient_id (str): The ID of the patient.
            doctor_id (str): The ID of the doctor.
            location_id (str): The ID of the location.
            date (str): The date of the appointment.
            time (str): The time of the appointment.

        Returns:
            dict: A dictionary containing the success status, message, and appointment information.
        """
        # rule: an appointment must be scheduled for a valid date and time
        if not date or not time:
            return {"success": False, "error": "Invalid date or time"}

        # rule: an appointment must be scheduled for a patient who is registered with the system
        if not any(a["patient_id"] == patient_id for a in self.appointments.values()):
            return {"success": False, "error": "Patient not registered"}

        # rule: an appointment must be scheduled for a doctor who is registered with the system
        if doctor_id not in self.doctors:
            return {"success": False, "error": "Doctor not registered"}

        # rule: a doctor must be available at the specified location for the appointment to be scheduled
        if location_id not in self.locations or self.locations[location_id]["name"] != self.doctors[doctor_id]["location"]:
            return {"success": False, "error": "Doctor not available at the specified location"}

        # create a new appointment record
        appointment_id = str(max((int(k) for k in self.appointments if k.isdigit()), default=0) + 1)
        appointment_info = {
            "id": appointment_id,
            "patient_id": patient_id,
            "doctor_id": doctor_id,
            "location_id": location_id,
            "date": date,
            "time": time,
            "status": "pending"
        }
        self.appointments[appointment_id] = appointment_info

        # return the new appointment record
        return {"success": True, "message": "Appointment scheduled", "data": appointment_info}

    def cancel_appointment(self, appointment_id: str) -> dict:
        """
        Cancel an existing appointment.

        Args:
            appointment_id (str): The ID of the appointment to cancel.

        Returns:
            dict: A dictionary containing the result of the operation.
                - "success": A boolean indicating whether the operation was successful.
                - "error": A string containing the error message if the operation failed.
                - "message": A string containing the message of the operation if the operation was successful.
                - "data": A dictionary containing the updated appointment information if the operation was successful.
        """
        if appointment_id not in self.appointments:
            return {"success": False, "error": "Appointment not found"}

        appointment = self.appointments[appointment_id]
        if appointment["status"] != "pending":
            return {"success": False, "error": "Appointment is not pending"}

        appointment["status"] = "cancelled"
        return {"success": True, "message": "Appointment cancelled", "data": appointment}
