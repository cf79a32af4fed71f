"""Airline reservations: flights with cabins and fares, passengers, bookings with tickets, seats, bags and refunds."""

from datetime import date
from typing import Any, Dict, List, Literal, Optional, TypedDict


class AircraftInfo(TypedDict):
    aircraft_code: str
    name: str
    business_rows: int  # rows 1..business_rows are business
    business_letters: str  # seat letters in a business row, e.g. "ACD"
    economy_rows: int  # the following economy_rows rows are economy
    economy_letters: str


class FareRuleInfo(TypedDict):
    fare_class: str
    cabin: str  # economy | business
    changeable: bool
    change_fee: float
    refund: str  # full (to original payment) | credit (travel credit minus cancel_fee) | none
    cancel_fee: float
    free_bags: int
    seat_selection: bool


class FlightInfo(TypedDict):
    flight_id: str
    flight_number: str
    origin: str
    destination: str
    departure: str  # local time, YYYY-MM-DDTHH:MM
    arrival: str
    aircraft_code: str
    status: str  # scheduled | delayed | cancelled | departed
    fares: Dict[str, float]  # fare_class -> price per passenger


class PassengerInfo(TypedDict):
    passenger_id: str
    first_name: str
    last_name: str
    date_of_birth: str
    email: str
    phone: str
    loyalty_tier: str  # none | silver | gold
    credit_balance: float  # travel credit available for new bookings


class BookingInfo(TypedDict):
    booking_id: str
    contact_passenger_id: str
    created_date: str
    status: str  # confirmed | cancelled
    payment_method: str  # card | travel_credit


class TicketInfo(TypedDict):
    ticket_id: str
    booking_id: str
    passenger_id: str
    flight_id: str
    fare_class: str
    price_paid: float
    seat: Optional[str]
    checked_bags: int
    status: str  # confirmed | checked_in | cancelled | flown


class PaymentInfo(TypedDict):
    payment_id: str
    booking_id: str
    ticket_id: Optional[str]
    kind: str  # fare | change | upgrade | bag_fee | refund
    amount: float  # positive = charged to the customer, negative = paid back
    method: str  # card | travel_credit
    date: str


BAG_FEE = 40.0
MAX_BAGS = 3
ACTIVE = ("confirmed", "checked_in")


class FlightBookings:
    """An airline reservation system: search, book, choose seats, change, cancel with refunds, bags and check-in."""

    def __init__(self):
        # Aircraft types and their cabin layouts.
        self.aircraft: Dict[str, AircraftInfo] = {}
        # Fare rules per fare class (economy_basic, economy_standard, economy_flex, business_standard, business_flex).
        self.fare_rules: Dict[str, FareRuleInfo] = {}
        # Flights keyed by flight_id (FL-nnnn), with prices per fare class.
        self.flights: Dict[str, FlightInfo] = {}
        # Passenger profiles keyed by passenger_id (P-nnnn).
        self.passengers: Dict[str, PassengerInfo] = {}
        # Bookings keyed by booking_id (BK-nnnn).
        self.bookings: Dict[str, BookingInfo] = {}
        # Tickets (one passenger on one flight) keyed by ticket_id (T-nnnnn).
        self.tickets: Dict[str, TicketInfo] = {}
        # Payment ledger keyed by payment_id (PAY-nnnn).
        self.payments: Dict[str, PaymentInfo] = {}
        # The current date (YYYY-MM-DD).
        self.today: str = ""

    # ----- helpers -------------------------------------------------------------------------------

    def _next_id(self, records: Dict[str, Any], prefix: str, width: int) -> str:
        numbers = [int(k[len(prefix):]) for k in records if k.startswith(prefix) and k[len(prefix):].isdigit()]
        return f"{prefix}{(max(numbers) + 1 if numbers else 1):0{width}d}"

    def _pay(self, booking_id: str, ticket_id: Optional[str], kind: str, amount: float, method: str) -> None:
        pid = self._next_id(self.payments, "PAY-", 4)
        self.payments[pid] = {"payment_id": pid, "booking_id": booking_id, "ticket_id": ticket_id, "kind": kind,
                              "amount": round(amount, 2), "method": method, "date": self.today}

    def _seats(self, flight_id: str, cabin: str) -> List[str]:
        plane = self.aircraft[self.flights[flight_id]["aircraft_code"]]
        if cabin == "business":
            rows, letters = range(1, plane["business_rows"] + 1), plane["business_letters"]
        else:
            first = plane["business_rows"] + 1
            rows, letters = range(first, first + plane["economy_rows"]), plane["economy_letters"]
        return [f"{r}{x}" for r in rows for x in letters]

    def _active_on(self, flight_id: str) -> List[TicketInfo]:
        return [t for t in self.tickets.values() if t["flight_id"] == flight_id and t["status"] in ACTIVE]

    def _free_count(self, flight_id: str, cabin: str) -> int:
        used = sum(1 for t in self._active_on(flight_id) if self.fare_rules[t["fare_class"]]["cabin"] == cabin)
        return len(self._seats(flight_id, cabin)) - used

    def _flight_day(self, flight_id: str) -> str:
        return self.flights[flight_id]["departure"][:10]

    def _bookable(self, flight_id: str) -> Optional[str]:
        flight = self.flights.get(flight_id)
        if flight is None:
            return f"No flight with id '{flight_id}'."
        if flight["status"] not in ("scheduled", "delayed"):
            return f"Flight {flight_id} is {flight['status']}."
        if self._flight_day(flight_id) <= self.today:
            return f"Flight {flight_id} departs on {self._flight_day(flight_id)}; bookings and changes close the day before."
        return None

    def _conflict(self, passenger_id: str, flight_id: str, ignore_ticket: Optional[str] = None) -> Optional[str]:
        """An active ticket of the passenger on the same flight or on a flight overlapping it in time."""
        new = self.flights[flight_id]
        for t in self.tickets.values():
            if t["passenger_id"] != passenger_id or t["status"] not in ACTIVE or t["ticket_id"] == ignore_ticket:
                continue
            other = self.flights[t["flight_id"]]
            if t["flight_id"] == flight_id or (other["departure"] < new["arrival"] and new["departure"] < other["arrival"]):
                return f"Passenger {passenger_id} already holds ticket {t['ticket_id']} on {t['flight_id']} at that time."
        return None

    def _cancel_one(self, ticket: TicketInfo) -> float:
        """Cancel a ticket and pay back what the rules allow; returns the refunded amount."""
        booking = self.bookings[ticket["booking_id"]]
        rule = self.fare_rules[ticket["fare_class"]]
        paid = ticket["price_paid"]
        airline_cancelled = self.flights[ticket["flight_id"]]["status"] == "cancelled"
        ticket["status"] = "cancelled"
        ticket["seat"] = None
        refund, method = 0.0, booking["payment_method"]
        if airline_cancelled or booking["created_date"] == self.today or rule["refund"] == "full":
            refund = paid
        elif rule["refund"] == "credit":
            refund, method = max(paid - rule["cancel_fee"], 0.0), "travel_credit"
        if refund > 0:
            self._pay(booking["booking_id"], ticket["ticket_id"], "refund", -refund, method)
            if method == "travel_credit":
                contact = self.passengers[booking["contact_passenger_id"]]
                contact["credit_balance"] = round(contact["credit_balance"] + refund, 2)
        if all(t["status"] == "cancelled" for t in self.tickets.values() if t["booking_id"] == booking["booking_id"]):
            booking["status"] = "cancelled"
        return refund

    def _ticket_error(self, ticket_id: str) -> Optional[str]:
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return f"No ticket with id '{ticket_id}'."
        if ticket["status"] != "confirmed":
            return f"Ticket {ticket_id} is {ticket['status']}; only confirmed tickets before check-in can be changed."
        return None

    # ----- queries -------------------------------------------------------------------------------

    def search_flights(self, origin: str, destination: str, departure_date: Optional[str] = None,
                       cabin: Optional[Literal["economy", "business"]] = None) -> dict:
        """Search flights on a route, optionally on one date, with seats left and fares per class.

        Args:
            origin: Departure airport code, e.g. "LIS".
            destination: Arrival airport code, e.g. "AMS".
            departure_date: Departure date YYYY-MM-DD; all dates when omitted.
            cabin: Only flights with seats left in this cabin.

        Returns:
            {"success": True, "data": [FlightInfo plus "seats_left": {"economy", "business"}, ...]} by departure.

        Constraints:
            Read-only. Airport codes are IATA codes (LIS, AMS, MAD, CDG, BER, FCO, DUB); cancelled and
            departed flights are listed too.
        """
        found = []
        for flight in sorted(self.flights.values(), key=lambda f: f["departure"]):
            if flight["origin"] != origin.upper() or flight["destination"] != destination.upper():
                continue
            if departure_date and flight["departure"][:10] != departure_date:
                continue
            left = {c: self._free_count(flight["flight_id"], c) for c in ("economy", "business")}
            if cabin and left[cabin] <= 0:
                continue
            view: Dict[str, Any] = dict(flight)
            view["seats_left"] = left
            found.append(view)
        return {"success": True, "data": found}

    def get_flight(self, flight_id: Optional[str] = None, flight_number: Optional[str] = None,
                   departure_date: Optional[str] = None) -> dict:
        """Get one flight by flight id, or by flight number and departure date.

        Args:
            flight_id: The flight id, e.g. "FL-1012".
            flight_number: The flight number, e.g. "MR204" (needs departure_date).
            departure_date: Departure date YYYY-MM-DD (with flight_number).

        Returns:
            {"success": True, "data": FlightInfo plus "seats_left"} or {"success": False, "error": str}.

        Constraints:
            Read-only. Give flight_id, or flight_number together with departure_date.
        """
        if flight_id is None and flight_number and departure_date:
            flight_id = next((f["flight_id"] for f in self.flights.values()
                              if f["flight_number"] == flight_number.upper() and f["departure"][:10] == departure_date), None)
        if not flight_id or flight_id not in self.flights:
            return {"success": False, "error": "No such flight; give a flight_id, or a flight_number with its departure_date."}
        view: Dict[str, Any] = dict(self.flights[flight_id])
        view["seats_left"] = {c: self._free_count(flight_id, c) for c in ("economy", "business")}
        return {"success": True, "data": view}

    def get_seat_map(self, flight_id: str, cabin: Literal["economy", "business"]) -> dict:
        """List the free and taken seats of a cabin on a flight (A and F are windows; see the layout for aisles).

        Args:
            flight_id: The flight id.
            cabin: economy or business.

        Returns:
            {"success": True, "data": {"free": [seats], "taken": [seats], "letters": str}} or an error.

        Constraints:
            Read-only. Seats of cancelled tickets are free again.
        """
        if flight_id not in self.flights:
            return {"success": False, "error": f"No flight with id '{flight_id}'."}
        seats = self._seats(flight_id, cabin)
        taken = {t["seat"] for t in self._active_on(flight_id) if t["seat"]}
        plane = self.aircraft[self.flights[flight_id]["aircraft_code"]]
        return {"success": True, "data": {"free": [s for s in seats if s not in taken],
                                          "taken": [s for s in seats if s in taken],
                                          "letters": plane["business_letters" if cabin == "business" else "economy_letters"]}}

    def get_fare_rules(self, fare_class: Optional[str] = None) -> dict:
        """Show the rules of one fare class, or of all of them (changes, refunds, bags, seat selection).

        Args:
            fare_class: e.g. "economy_standard"; all classes when omitted.

        Returns:
            {"success": True, "data": FareRuleInfo or [FareRuleInfo, ...]} or {"success": False, "error": str}.

        Constraints:
            Read-only. A ticket follows the rules of its own fare class.
        """
        if fare_class is None:
            return {"success": True, "data": [self.fare_rules[k] for k in sorted(self.fare_rules)]}
        if fare_class not in self.fare_rules:
            return {"success": False, "error": f"Unknown fare class '{fare_class}'. Known: {sorted(self.fare_rules)}."}
        return {"success": True, "data": self.fare_rules[fare_class]}

    def get_passenger(self, passenger_id: Optional[str] = None, email: Optional[str] = None) -> dict:
        """Look up a passenger profile by passenger id or email address.

        Args:
            passenger_id: The passenger id, e.g. "P-0007".
            email: The passenger's email address (case-insensitive).

        Returns:
            {"success": True, "data": PassengerInfo} or {"success": False, "error": str}.

        Constraints:
            Read-only. Give passenger_id or email.
        """
        if passenger_id:
            if passenger_id not in self.passengers:
                return {"success": False, "error": f"No passenger with id '{passenger_id}'."}
            return {"success": True, "data": self.passengers[passenger_id]}
        if email:
            for pax in self.passengers.values():
                if pax["email"].lower() == email.strip().lower():
                    return {"success": True, "data": pax}
            return {"success": False, "error": f"No passenger with email '{email}'."}
        return {"success": False, "error": "Give a passenger_id or an email."}

    def find_passengers(self, last_name: str, first_name: Optional[str] = None) -> dict:
        """Find passenger profiles by last name (and optionally first name), case-insensitive.

        Args:
            last_name: The passenger's last name.
            first_name: The passenger's first name.

        Returns:
            {"success": True, "data": [PassengerInfo, ...]}.

        Constraints:
            Read-only. Several passengers may share a last name; confirm with the first name or email.
        """
        found = [p for p in self.passengers.values()
                 if p["last_name"].lower() == last_name.strip().lower()
                 and (not first_name or p["first_name"].lower() == first_name.strip().lower())]
        return {"success": True, "data": sorted(found, key=lambda p: p["passenger_id"])}

    def get_booking(self, booking_id: str) -> dict:
        """Get a booking with its tickets (with flight times) and its payments.

        Args:
            booking_id: The booking id, e.g. "BK-2041".

        Returns:
            {"success": True, "data": BookingInfo plus "tickets" and "payments"} or {"success": False, "error": str}.

        Constraints:
            Read-only. Refunds appear in payments as negative amounts.
        """
        booking = self.bookings.get(booking_id)
        if booking is None:
            return {"success": False, "error": f"No booking with id '{booking_id}'."}
        view: Dict[str, Any] = dict(booking)
        tickets = []
        for t in sorted(self.tickets.values(), key=lambda t: t["ticket_id"]):
            if t["booking_id"] == booking_id:
                row: Dict[str, Any] = dict(t)
                flight = self.flights[t["flight_id"]]
                row.update({k: flight[k] for k in ("flight_number", "origin", "destination", "departure")})
                row["flight_status"] = flight["status"]
                tickets.append(row)
        view["tickets"] = tickets
        view["payments"] = [p for p in self.payments.values() if p["booking_id"] == booking_id]
        return {"success": True, "data": view}

    def list_bookings(self, passenger_id: str, status: Optional[Literal["confirmed", "cancelled"]] = None) -> dict:
        """List the bookings a passenger made or travels on.

        Args:
            passenger_id: The passenger id.
            status: Only confirmed or only cancelled bookings.

        Returns:
            {"success": True, "data": [BookingInfo plus "ticket_ids", ...]} or {"success": False, "error": str}.

        Constraints:
            Read-only. Includes bookings where the passenger travels but is not the contact.
        """
        if passenger_id not in self.passengers:
            return {"success": False, "error": f"No passenger with id '{passenger_id}'."}
        found = []
        for booking in sorted(self.bookings.values(), key=lambda b: b["booking_id"]):
            ids = [t["ticket_id"] for t in self.tickets.values() if t["booking_id"] == booking["booking_id"]]
            on_it = any(self.tickets[i]["passenger_id"] == passenger_id for i in ids)
            if (booking["contact_passenger_id"] == passenger_id or on_it) and (status is None or booking["status"] == status):
                view: Dict[str, Any] = dict(booking)
                view["ticket_ids"] = sorted(ids)
                found.append(view)
        return {"success": True, "data": found}

    def quote_change(self, ticket_id: str, new_flight_id: str) -> dict:
        """Price a flight change without making it: change fee plus fare difference.

        Args:
            ticket_id: The ticket to change.
            new_flight_id: The flight to move to (same route).

        Returns:
            {"success": True, "data": {"allowed", "reason", "change_fee", "fare_difference", "total_due"}}.

        Constraints:
            Read-only; nothing is charged. Use change_flight to make the change.
        """
        if ticket_id not in self.tickets:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if new_flight_id not in self.flights:
            return {"success": False, "error": f"No flight with id '{new_flight_id}'."}
        problem, fee, diff = self._change_terms(ticket_id, new_flight_id)
        return {"success": True, "data": {"allowed": problem is None, "reason": problem, "change_fee": fee,
                                          "fare_difference": diff, "total_due": fee + diff}}

    def _change_terms(self, ticket_id: str, new_flight_id: str) -> tuple:
        ticket = self.tickets[ticket_id]
        rule = self.fare_rules[ticket["fare_class"]]
        old, new = self.flights[ticket["flight_id"]], self.flights[new_flight_id]
        disrupted = old["status"] == "cancelled"
        problem = self._ticket_error(ticket_id) or self._bookable(new_flight_id)
        if problem is None and (old["origin"], old["destination"]) != (new["origin"], new["destination"]):
            problem = "A change must keep the same origin and destination."
        if problem is None and new_flight_id == ticket["flight_id"]:
            problem = "The ticket is already on that flight."
        if problem is None and not disrupted and not rule["changeable"]:
            problem = f"Fare {ticket['fare_class']} does not allow changes."
        if problem is None and not disrupted and old["departure"][:10] <= self.today:
            problem = "Changes close the day before departure."
        if problem is None and self._free_count(new_flight_id, rule["cabin"]) <= 0:
            problem = f"No {rule['cabin']} seats left on {new_flight_id}."
        if problem is None:
            problem = self._conflict(ticket["passenger_id"], new_flight_id, ignore_ticket=ticket_id)
        fee = 0.0 if disrupted else rule["change_fee"]
        diff = 0.0 if disrupted else max(new["fares"].get(ticket["fare_class"], 0.0) - ticket["price_paid"], 0.0)
        return problem, fee, diff

    # ----- changes -------------------------------------------------------------------------------

    def add_passenger(self, first_name: str, last_name: str, date_of_birth: str, email: str,
                      phone: Optional[str] = None) -> dict:
        """Create a passenger profile (needed before someone new can be booked).

        Args:
            first_name: First name as on the passport.
            last_name: Last name as on the passport.
            date_of_birth: YYYY-MM-DD.
            email: Contact email; must not belong to another profile.
            phone: Contact phone number.

        Returns:
            {"success": True, "message": str, "data": {"passenger_id": str}} or {"success": False, "error": str}.

        Constraints:
            The email must be unique and the date of birth in the past.
        """
        if not first_name.strip() or not last_name.strip():
            return {"success": False, "error": "First and last name are required."}
        try:
            born = date.fromisoformat(date_of_birth)
        except ValueError:
            return {"success": False, "error": f"date_of_birth '{date_of_birth}' is not YYYY-MM-DD."}
        if born.isoformat() >= self.today:
            return {"success": False, "error": "date_of_birth must be in the past."}
        if any(p["email"].lower() == email.strip().lower() for p in self.passengers.values()):
            return {"success": False, "error": f"A profile with email '{email}' already exists."}
        pid = self._next_id(self.passengers, "P-", 4)
        self.passengers[pid] = {"passenger_id": pid, "first_name": first_name.strip(), "last_name": last_name.strip(),
                                "date_of_birth": born.isoformat(), "email": email.strip(), "phone": phone or "",
                                "loyalty_tier": "none", "credit_balance": 0.0}
        return {"success": True, "message": f"Created passenger {pid}.", "data": {"passenger_id": pid}}

    def update_contact(self, passenger_id: str, email: Optional[str] = None, phone: Optional[str] = None) -> dict:
        """Update a passenger's email and/or phone number.

        Args:
            passenger_id: The passenger id.
            email: New email address; must not belong to another profile.
            phone: New phone number.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            The new email must not belong to another profile.
        """
        pax = self.passengers.get(passenger_id)
        if pax is None:
            return {"success": False, "error": f"No passenger with id '{passenger_id}'."}
        if not email and not phone:
            return {"success": False, "error": "Give an email or a phone number to update."}
        if email and any(p["email"].lower() == email.strip().lower() and k != passenger_id for k, p in self.passengers.items()):
            return {"success": False, "error": f"Email '{email}' belongs to another profile."}
        if email:
            pax["email"] = email.strip()
        if phone:
            pax["phone"] = phone.strip()
        return {"success": True, "message": f"Contact details of {passenger_id} updated."}

    def create_booking(self, contact_passenger_id: str, passenger_ids: List[str], flight_ids: List[str],
                       fare_class: Literal["economy_basic", "economy_standard", "economy_flex",
                                           "business_standard", "business_flex"],
                       payment_method: Literal["card", "travel_credit"] = "card") -> dict:
        """Book one or more passengers on one or more flights in one fare class; one ticket per passenger and flight.

        Args:
            contact_passenger_id: The passenger who books and pays.
            passenger_ids: Everyone travelling (1-9 passenger ids; may include the contact).
            flight_ids: The flights, e.g. an outbound and a return flight.
            fare_class: The fare class for every ticket.
            payment_method: card, or travel_credit from the contact's credit balance.

        Returns:
            {"success": True, "message": str, "data": {"booking_id", "ticket_ids", "total"}} or an error.

        Constraints:
            Flights must be scheduled or delayed and depart after today, with enough seats left in the cabin.
            No passenger may hold two active tickets on the same or overlapping flights. Travel credit must
            cover the whole total.
        """
        if contact_passenger_id not in self.passengers:
            return {"success": False, "error": f"No passenger with id '{contact_passenger_id}'."}
        if not passenger_ids or len(passenger_ids) > 9 or len(set(passenger_ids)) != len(passenger_ids):
            return {"success": False, "error": "Give 1-9 distinct passenger ids."}
        if not flight_ids or len(set(flight_ids)) != len(flight_ids):
            return {"success": False, "error": "Give at least one flight, each once."}
        if fare_class not in self.fare_rules:
            return {"success": False, "error": f"Unknown fare class '{fare_class}'."}
        cabin = self.fare_rules[fare_class]["cabin"]
        for pid in passenger_ids:
            if pid not in self.passengers:
                return {"success": False, "error": f"No passenger with id '{pid}'."}
        total = 0.0
        for fid in flight_ids:
            problem = self._bookable(fid)
            if problem:
                return {"success": False, "error": problem}
            if self._free_count(fid, cabin) < len(passenger_ids):
                return {"success": False, "error": f"Only {self._free_count(fid, cabin)} {cabin} seat(s) left on {fid}."}
            for pid in passenger_ids:
                problem = self._conflict(pid, fid)
                if problem:
                    return {"success": False, "error": problem}
            total += self.flights[fid]["fares"][fare_class] * len(passenger_ids)
        for i, a in enumerate(flight_ids):
            for b in flight_ids[i + 1:]:
                fa, fb = self.flights[a], self.flights[b]
                if fa["departure"] < fb["arrival"] and fb["departure"] < fa["arrival"]:
                    return {"success": False, "error": f"Flights {a} and {b} overlap in time."}
        contact = self.passengers[contact_passenger_id]
        if payment_method == "travel_credit" and contact["credit_balance"] < total:
            return {"success": False, "error": f"Travel credit {contact['credit_balance']} does not cover {total}; pay by card."}
        booking_id = self._next_id(self.bookings, "BK-", 4)
        self.bookings[booking_id] = {"booking_id": booking_id, "contact_passenger_id": contact_passenger_id,
                                     "created_date": self.today, "status": "confirmed", "payment_method": payment_method}
        ticket_ids = []
        for fid in flight_ids:
            for pid in passenger_ids:
                tid = self._next_id(self.tickets, "T-", 5)
                self.tickets[tid] = {"ticket_id": tid, "booking_id": booking_id, "passenger_id": pid, "flight_id": fid,
                                     "fare_class": fare_class, "price_paid": self.flights[fid]["fares"][fare_class],
                                     "seat": None, "checked_bags": 0, "status": "confirmed"}
                ticket_ids.append(tid)
        if payment_method == "travel_credit":
            contact["credit_balance"] = round(contact["credit_balance"] - total, 2)
        self._pay(booking_id, None, "fare", total, payment_method)
        return {"success": True, "message": f"Booking {booking_id} confirmed, total {total:.2f}.",
                "data": {"booking_id": booking_id, "ticket_ids": ticket_ids, "total": total}}

    def select_seat(self, ticket_id: str, seat: str) -> dict:
        """Choose (or change) the seat of a ticket.

        Args:
            ticket_id: The ticket id.
            seat: Seat like "14C"; it must be in the ticket's cabin and free.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only confirmed tickets on scheduled or delayed flights; basic economy fares get a seat at check-in
            and cannot choose one.
        """
        problem = self._ticket_error(ticket_id)
        if problem:
            return {"success": False, "error": problem}
        ticket = self.tickets[ticket_id]
        if self.flights[ticket["flight_id"]]["status"] not in ("scheduled", "delayed"):
            return {"success": False, "error": f"Flight {ticket['flight_id']} is {self.flights[ticket['flight_id']]['status']}."}
        rule = self.fare_rules[ticket["fare_class"]]
        if not rule["seat_selection"]:
            return {"success": False, "error": f"Fare {ticket['fare_class']} does not include seat selection; a seat is given at check-in."}
        seat = seat.strip().upper()
        if seat not in self._seats(ticket["flight_id"], rule["cabin"]):
            return {"success": False, "error": f"Seat {seat} is not a {rule['cabin']} seat on this flight."}
        holder = next((t["ticket_id"] for t in self._active_on(ticket["flight_id"]) if t["seat"] == seat), None)
        if holder == ticket_id:
            return {"success": False, "error": f"Ticket {ticket_id} already has seat {seat}."}
        if holder:
            return {"success": False, "error": f"Seat {seat} is taken."}
        ticket["seat"] = seat
        return {"success": True, "message": f"Seat {seat} assigned to ticket {ticket_id}."}

    def change_flight(self, ticket_id: str, new_flight_id: str) -> dict:
        """Move a ticket to another flight on the same route, paying the change fee and any fare difference.

        Args:
            ticket_id: The ticket id.
            new_flight_id: The new flight.

        Returns:
            {"success": True, "message": str, "data": {"charged": float}} or {"success": False, "error": str}.

        Constraints:
            Confirmed tickets only, up to the day before departure; the fare must be changeable. A cheaper new
            flight is not refunded. When the airline cancelled the original flight, the change is free for any
            fare. The seat is released; bags carry over.
        """
        if ticket_id not in self.tickets:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if new_flight_id not in self.flights:
            return {"success": False, "error": f"No flight with id '{new_flight_id}'."}
        problem, fee, diff = self._change_terms(ticket_id, new_flight_id)
        if problem:
            return {"success": False, "error": problem}
        ticket = self.tickets[ticket_id]
        old = ticket["flight_id"]
        ticket["flight_id"] = new_flight_id
        ticket["seat"] = None
        ticket["price_paid"] = round(ticket["price_paid"] + diff, 2)
        if fee + diff > 0:
            self._pay(ticket["booking_id"], ticket_id, "change", fee + diff, "card")
        return {"success": True, "message": f"Ticket {ticket_id} moved from {old} to {new_flight_id}; charged {fee + diff:.2f}.",
                "data": {"charged": fee + diff}}

    def upgrade_cabin(self, ticket_id: str) -> dict:
        """Upgrade an economy ticket to business flex, paying the fare difference by card.

        Args:
            ticket_id: The ticket id.

        Returns:
            {"success": True, "message": str, "data": {"charged": float}} or {"success": False, "error": str}.

        Constraints:
            Confirmed economy tickets up to the day before departure, with a business seat left. The economy
            seat is released.
        """
        problem = self._ticket_error(ticket_id)
        if problem:
            return {"success": False, "error": problem}
        ticket = self.tickets[ticket_id]
        if self.fare_rules[ticket["fare_class"]]["cabin"] != "economy":
            return {"success": False, "error": f"Ticket {ticket_id} is already in business."}
        flight = self.flights[ticket["flight_id"]]
        if flight["departure"][:10] <= self.today or flight["status"] not in ("scheduled", "delayed"):
            return {"success": False, "error": "Upgrades close the day before departure and need an operating flight."}
        if self._free_count(ticket["flight_id"], "business") <= 0:
            return {"success": False, "error": f"No business seats left on {ticket['flight_id']}."}
        charge = max(flight["fares"]["business_flex"] - ticket["price_paid"], 0.0)
        ticket["fare_class"] = "business_flex"
        ticket["seat"] = None
        ticket["price_paid"] = round(ticket["price_paid"] + charge, 2)
        self._pay(ticket["booking_id"], ticket_id, "upgrade", charge, "card")
        return {"success": True, "message": f"Ticket {ticket_id} upgraded to business_flex for {charge:.2f}.",
                "data": {"charged": charge}}

    def add_checked_bags(self, ticket_id: str, count: int) -> dict:
        """Add checked bags to a ticket; bags beyond the free allowance cost 40.00 each.

        Args:
            ticket_id: The ticket id.
            count: Number of bags to add (1-3).

        Returns:
            {"success": True, "message": str, "data": {"checked_bags": int, "fee": float}} or an error.

        Constraints:
            Confirmed or checked-in tickets on a flight that has not departed; at most 3 bags per ticket.
            Free allowance = the fare's free bags, plus one for gold loyalty members.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] not in ACTIVE or self.flights[ticket["flight_id"]]["status"] in ("departed", "cancelled"):
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']} on a {self.flights[ticket['flight_id']]['status']} flight."}
        if count < 1:
            return {"success": False, "error": "count must be at least 1."}
        if ticket["checked_bags"] + count > MAX_BAGS:
            return {"success": False, "error": f"At most {MAX_BAGS} bags per ticket; it already has {ticket['checked_bags']}."}
        free = self.fare_rules[ticket["fare_class"]]["free_bags"]
        if self.passengers[ticket["passenger_id"]]["loyalty_tier"] == "gold":
            free += 1
        paid_bags = max(ticket["checked_bags"] + count - max(free, ticket["checked_bags"]), 0)
        fee = BAG_FEE * paid_bags
        ticket["checked_bags"] += count
        if fee > 0:
            self._pay(ticket["booking_id"], ticket_id, "bag_fee", fee, "card")
        return {"success": True, "message": f"Ticket {ticket_id} now has {ticket['checked_bags']} bag(s); fee {fee:.2f}.",
                "data": {"checked_bags": ticket["checked_bags"], "fee": fee}}

    def check_in(self, ticket_id: str) -> dict:
        """Check a passenger in; a seat is assigned automatically when the ticket has none.

        Args:
            ticket_id: The ticket id.

        Returns:
            {"success": True, "message": str, "data": {"seat": str}} or {"success": False, "error": str}.

        Constraints:
            Confirmed tickets only; check-in opens the day before departure and stays open on departure day;
            the flight must be scheduled or delayed.
        """
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            return {"success": False, "error": f"No ticket with id '{ticket_id}'."}
        if ticket["status"] != "confirmed":
            return {"success": False, "error": f"Ticket {ticket_id} is {ticket['status']}."}
        flight = self.flights[ticket["flight_id"]]
        if flight["status"] not in ("scheduled", "delayed"):
            return {"success": False, "error": f"Flight {flight['flight_id']} is {flight['status']}."}
        days = (date.fromisoformat(flight["departure"][:10]) - date.fromisoformat(self.today)).days
        if days > 1 or days < 0:
            return {"success": False, "error": f"Check-in opens the day before departure ({flight['departure'][:10]})."}
        if ticket["seat"] is None:
            taken = {t["seat"] for t in self._active_on(ticket["flight_id"]) if t["seat"]}
            cabin = self.fare_rules[ticket["fare_class"]]["cabin"]
            free = [s for s in self._seats(ticket["flight_id"], cabin) if s not in taken]
            if not free:
                return {"success": False, "error": "No free seat to assign."}
            ticket["seat"] = free[-1]
        ticket["status"] = "checked_in"
        return {"success": True, "message": f"Checked in ticket {ticket_id}, seat {ticket['seat']}.",
                "data": {"seat": ticket["seat"]}}

    def cancel_ticket(self, ticket_id: str) -> dict:
        """Cancel one ticket and refund what its fare allows.

        Args:
            ticket_id: The ticket id.

        Returns:
            {"success": True, "message": str, "data": {"refund": float}} or {"success": False, "error": str}.

        Constraints:
            Confirmed tickets up to the day before departure (any time if the airline cancelled the flight).
            Full refund to the original payment when the airline cancelled the flight, when the booking was
            made today, or for full-refund fares; credit fares refund the price minus the cancel fee as travel
            credit to the booking contact; basic fares refund nothing.
        """
        problem = self._ticket_error(ticket_id)
        if problem:
            return {"success": False, "error": problem}
        ticket = self.tickets[ticket_id]
        flight = self.flights[ticket["flight_id"]]
        if flight["status"] != "cancelled" and flight["departure"][:10] <= self.today:
            return {"success": False, "error": "Cancellations close the day before departure."}
        refund = self._cancel_one(ticket)
        return {"success": True, "message": f"Ticket {ticket_id} cancelled; refund {refund:.2f}.", "data": {"refund": refund}}

    def cancel_booking(self, booking_id: str) -> dict:
        """Cancel every remaining ticket of a booking, refunding each by its fare rules.

        Args:
            booking_id: The booking id.

        Returns:
            {"success": True, "message": str, "data": {"refund": float, "tickets": [ids]}} or an error.

        Constraints:
            All-or-nothing: fails if any active ticket is checked in or departs today or earlier (unless its
            flight was cancelled by the airline). Flown tickets are left as they are.
        """
        booking = self.bookings.get(booking_id)
        if booking is None:
            return {"success": False, "error": f"No booking with id '{booking_id}'."}
        if booking["status"] == "cancelled":
            return {"success": False, "error": f"Booking {booking_id} is already cancelled."}
        open_tickets = sorted((t for t in self.tickets.values() if t["booking_id"] == booking_id and t["status"] in ACTIVE),
                              key=lambda t: t["ticket_id"])
        if not open_tickets:
            return {"success": False, "error": f"Booking {booking_id} has no tickets left to cancel."}
        for t in open_tickets:
            flight = self.flights[t["flight_id"]]
            if t["status"] == "checked_in" or (flight["status"] != "cancelled" and flight["departure"][:10] <= self.today):
                return {"success": False, "error": f"Ticket {t['ticket_id']} can no longer be cancelled; nothing was changed."}
        refund = sum(self._cancel_one(t) for t in open_tickets)
        return {"success": True, "message": f"Booking {booking_id} cancelled; refund {refund:.2f}.",
                "data": {"refund": refund, "tickets": [t["ticket_id"] for t in open_tickets]}}
