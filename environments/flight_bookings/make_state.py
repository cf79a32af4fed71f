"""Write environments/flight_bookings/default_state.json: Meridian Air's reservations on 2026-06-15.

Deterministic (seeded). Passengers P-0001..P-0020 hold the hand-placed bookings the scenarios use;
P-0021..P-0040 hold seeded filler bookings. Run: python environments/flight_bookings/make_state.py
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

TODAY = date(2026, 6, 15)

AIRCRAFT = {
    "E175": {"aircraft_code": "E175", "name": "Embraer 175", "business_rows": 3, "business_letters": "ADF",
             "economy_rows": 16, "economy_letters": "ACDF"},
    "A220": {"aircraft_code": "A220", "name": "Airbus A220-300", "business_rows": 3, "business_letters": "ACDF",
             "economy_rows": 20, "economy_letters": "ABCDEF"},
}
FARE_RULES = [  # class, cabin, changeable, change fee, refund, cancel fee, free bags, seat selection
    ("economy_basic", "economy", False, 0.0, "none", 0.0, 0, False),
    ("economy_standard", "economy", True, 60.0, "credit", 50.0, 1, True),
    ("economy_flex", "economy", True, 0.0, "full", 0.0, 1, True),
    ("business_standard", "business", True, 60.0, "credit", 100.0, 2, True),
    ("business_flex", "business", True, 0.0, "full", 0.0, 2, True),
]
ROUTES = [  # outbound number, origin, destination, out dep, out arr, back dep, back arr, base fare, aircraft, first day
    ("MR204", "LIS", "AMS", "08:15", "12:10", "13:10", "15:05", 95, "A220", 11),
    ("MR310", "LIS", "MAD", "07:00", "09:20", "10:10", "10:40", 60, "E175", 12),
    ("MR420", "LIS", "CDG", "09:30", "13:00", "14:00", "15:45", 85, "A220", 12),
    ("MR530", "AMS", "BER", "16:00", "17:20", "18:00", "19:20", 70, "E175", 13),
    ("MR640", "MAD", "FCO", "12:00", "14:30", "15:30", "18:00", 80, "E175", 14),
    ("MR750", "DUB", "LIS", "06:30", "10:15", "11:15", "14:00", 110, "A220", 13),
]
NAMES = [
    ("Hannah", "Weiss"), ("Lucas", "Ferreira"), ("Marta", "Ferreira"), ("Olivia", "Brooks"), ("Noah", "Brooks"),
    ("Ahmed", "Karim"), ("Chiara", "Ricci"), ("Jonas", "Eriksen"), ("Sofia", "Alves"), ("Pedro", "Alves"),
    ("Emma", "Dubois"), ("Liam", "O'Connor"), ("Yara", "Haddad"), ("Mateus", "Lima"), ("Greta", "Vogel"),
    ("Daniel", "Cohen"), ("Ines", "Moura"), ("Victor", "Nilsson"), ("Clara", "Santos"), ("Tomas", "Novak"),
    ("Amelie", "Roux"), ("Rui", "Costa"), ("Eva", "Lindqvist"), ("Marco", "Bellini"), ("Sara", "Jansen"),
    ("Hugo", "Petit"), ("Lena", "Schmidt"), ("Oscar", "Berg"), ("Nina", "Kovacs"), ("Pablo", "Ortega"),
    ("Aoife", "Byrne"), ("Felix", "Wagner"), ("Alice", "Moreau"), ("Bruno", "Teixeira"), ("Zoe", "Martin"),
    ("Ivan", "Petrov"), ("Julia", "Castro"), ("Karl", "Meyer"), ("Mia", "Rossi"), ("Leo", "Fontaine"),
]


class Builder:
    """Accumulates the state with sequential ids."""

    def __init__(self) -> None:
        self.rng = random.Random(20260615)
        self.flights: dict = {}
        self.passengers: dict = {}
        self.bookings: dict = {}
        self.tickets: dict = {}
        self.payments: dict = {}

    def pay(self, booking: str, ticket: str | None, kind: str, amount: float, method: str, day: str) -> None:
        pid = f"PAY-{len(self.payments) + 1:04d}"
        self.payments[pid] = {"payment_id": pid, "booking_id": booking, "ticket_id": ticket, "kind": kind,
                              "amount": float(amount), "method": method, "date": day}

    def flight(self, number: str, origin: str, dest: str, day: date, dep: str, arr: str, base: int, plane: str) -> None:
        fid = f"FL-{1001 + len(self.flights)}"
        ahead = (day - TODAY).days
        bump = 0 if ahead > 10 else 15 if ahead > 3 else 35
        b = base + bump + self.rng.choice([0, 5, 10, 15])
        status = "departed" if day < TODAY else "scheduled"
        self.flights[fid] = {"flight_id": fid, "flight_number": number, "origin": origin, "destination": dest,
                             "departure": f"{day.isoformat()}T{dep}", "arrival": f"{day.isoformat()}T{arr}",
                             "aircraft_code": plane, "status": status,
                             "fares": {"economy_basic": float(b), "economy_standard": float(b + 40),
                                       "economy_flex": float(b + 130), "business_standard": float(3 * b + 60),
                                       "business_flex": float(3 * b + 200)}}

    def find(self, number: str, day: str) -> str:
        return next(k for k, f in self.flights.items() if f["flight_number"] == number and f["departure"][:10] == day)

    def book(self, contact: str, pax: list[str], flights: list[str], fare: str, created: date,
             method: str = "card", seats: list[str | None] | None = None, bags: int = 0) -> list[str]:
        bid = f"BK-{2001 + len(self.bookings)}"
        self.bookings[bid] = {"booking_id": bid, "contact_passenger_id": contact, "created_date": created.isoformat(),
                              "status": "confirmed", "payment_method": method}
        total, ids = 0.0, []
        for n, fid in enumerate(flights):
            flown = self.flights[fid]["status"] == "departed"
            for m, pid in enumerate(pax):
                tid = f"T-{10001 + len(self.tickets)}"
                price = self.flights[fid]["fares"][fare]
                seat = seats[n * len(pax) + m] if seats else None
                self.tickets[tid] = {"ticket_id": tid, "booking_id": bid, "passenger_id": pid, "flight_id": fid,
                                     "fare_class": fare, "price_paid": price, "seat": seat, "checked_bags": bags,
                                     "status": "flown" if flown else "confirmed"}
                total += price
                ids.append(tid)
        self.pay(bid, None, "fare", total, method, created.isoformat())
        return ids


def build() -> dict:
    """Build the whole state."""
    b = Builder()
    for number, org, dst, od, oa, bd, ba, base, plane, first in ROUTES:
        back = number[:-1] + str(int(number[-1]) + 1)
        for k in range(7):
            day = date(2026, 6, first) + timedelta(days=4 * k)
            b.flight(number, org, dst, day, od, oa, base, plane)
            b.flight(back, dst, org, day + timedelta(days=1), bd, ba, base, plane)
    for n, (first, last) in enumerate(NAMES, start=1):
        pid = f"P-{n:04d}"
        email = f"{first.lower()}.{last.lower().replace(chr(39), '')}@mail.example"
        tier = "gold" if n in (8, 23, 31) else "silver" if n % 6 == 0 else "none"
        b.passengers[pid] = {"passenger_id": pid, "first_name": first, "last_name": last,
                             "date_of_birth": date(1960 + (n * 7) % 40, 1 + n % 12, 1 + (n * 3) % 28).isoformat(),
                             "email": email, "phone": f"+351 91{n:03d} {1000 + n * 37:04d}", "loyalty_tier": tier,
                             "credit_balance": 0.0}
    b.passengers["P-0005"]["date_of_birth"] = "1984-03-09"
    b.passengers["P-0013"]["credit_balance"] = 200.0

    d = lambda s: date.fromisoformat(s)  # noqa: E731
    # Hand-placed bookings for the scenarios.
    b.book("P-0011", ["P-0011"], [b.find("MR204", "2026-06-23")], "economy_standard", d("2026-06-01"))  # easy seat
    b.book("P-0012", ["P-0012"], [b.find("MR420", "2026-06-24")], "economy_basic", d("2026-06-03"))  # easy bag
    b.book("P-0002", ["P-0002", "P-0003"], [b.find("MR310", "2026-06-20")], "economy_standard", d("2026-05-28"),
           seats=["10C", "10D"])  # change: Lucas standard
    b.book("P-0003", ["P-0003"], [b.find("MR311", "2026-06-25")], "economy_basic", d("2026-05-29"))
    cancelled_flight = b.find("MR420", "2026-06-20")
    b.book("P-0009", ["P-0009", "P-0010"], [cancelled_flight], "economy_basic", d("2026-05-20"))  # airline cancelled
    b.book("P-0006", ["P-0006"], [b.find("MR204", "2026-06-19"), b.find("MR205", "2026-06-24")], "economy_standard",
           TODAY)  # booked today by mistake
    b.book("P-0006", ["P-0006"], [b.find("MR750", "2026-06-29")], "economy_basic", d("2026-06-08"))
    b.book("P-0008", ["P-0008"], [b.find("MR310", "2026-06-16")], "economy_standard", d("2026-05-30"))  # gold, check-in
    b.book("P-0007", ["P-0007"], [b.find("MR310", "2026-06-24")], "economy_flex", d("2026-06-02"), seats=["8C"])  # upgrade
    b.flights[cancelled_flight]["status"] = "cancelled"

    # Seeded filler bookings for P-0021..P-0040: past (flown), upcoming, and a few cancelled.
    fares = ["economy_basic", "economy_standard", "economy_standard", "economy_flex", "business_standard", "business_flex"]
    out_ids = [k for k, f in b.flights.items() if f["status"] != "cancelled" and f["flight_number"][-1] in "0"]
    for n in range(36):
        pax = [f"P-{21 + (n + j * 7) % 20:04d}" for j in range(b.rng.choice([1, 1, 1, 2, 3]))]
        out = b.rng.choice(out_ids)
        flights = [out]
        of = b.flights[out]
        back = [k for k, f in b.flights.items() if f["origin"] == of["destination"] and f["destination"] == of["origin"]
                and f["departure"] > of["arrival"] and f["status"] != "cancelled"]
        if back and b.rng.random() < 0.6:
            flights.append(b.rng.choice(back[:3]))
        busy = any(t["passenger_id"] in pax and t["flight_id"] in flights for t in b.tickets.values())
        if busy:
            continue
        fare = b.rng.choice(fares)
        created = d(of["departure"][:10]) - timedelta(days=b.rng.randrange(5, 40))
        created = min(created, TODAY - timedelta(days=1))
        ids = b.book(pax[0], pax, flights, fare, created, bags=b.rng.choice([0, 0, 1]))
        cabin_letters = "ADF" if fare.startswith("business") else "ACDF"
        for tid in ids:
            t = b.tickets[tid]
            if fare != "economy_basic" and b.rng.random() < 0.6:
                row = b.rng.randrange(1, 4) if fare.startswith("business") else b.rng.randrange(4, 20)
                seat = f"{row}{b.rng.choice(cabin_letters)}"
                if not any(o["seat"] == seat and o["flight_id"] == t["flight_id"] for o in b.tickets.values()):
                    t["seat"] = seat
        if b.rng.random() < 0.12 and all(b.tickets[i]["status"] == "confirmed" for i in ids):
            bid = b.tickets[ids[0]]["booking_id"]
            b.bookings[bid]["status"] = "cancelled"
            for tid in ids:
                b.tickets[tid]["status"] = "cancelled"
                b.tickets[tid]["seat"] = None
                when = (created + timedelta(days=2)).isoformat()
                price = b.tickets[tid]["price_paid"]
                if fare.endswith("flex"):
                    b.pay(bid, tid, "refund", -price, "card", when)
                elif fare.endswith("standard"):
                    credit = price - (50.0 if fare.startswith("economy") else 100.0)
                    b.pay(bid, tid, "refund", -credit, "travel_credit", when)
                    b.passengers[pax[0]]["credit_balance"] += credit
    for t in b.tickets.values():  # today's and tomorrow's filler passengers may have checked in already
        day = b.flights[t["flight_id"]]["departure"][:10]
        if t["status"] == "confirmed" and day in ("2026-06-15", "2026-06-16") and t["passenger_id"] >= "P-0021":
            t["status"] = "checked_in"
            if t["seat"] is None:
                plane = AIRCRAFT[b.flights[t["flight_id"]]["aircraft_code"]]
                taken = {o["seat"] for o in b.tickets.values() if o["flight_id"] == t["flight_id"] and o["seat"]}
                rows = range(plane["business_rows"] + plane["economy_rows"], plane["business_rows"], -1)
                t["seat"] = next(f"{r}{x}" for r in rows for x in reversed(plane["economy_letters"])
                                 if f"{r}{x}" not in taken)

    return {"aircraft": AIRCRAFT,
            "fare_rules": {r[0]: dict(zip(["fare_class", "cabin", "changeable", "change_fee", "refund", "cancel_fee",
                                            "free_bags", "seat_selection"], r, strict=True)) for r in FARE_RULES},
            "flights": b.flights, "passengers": b.passengers, "bookings": b.bookings, "tickets": b.tickets,
            "payments": b.payments, "today": TODAY.isoformat()}


if __name__ == "__main__":
    out = Path(__file__).with_name("default_state.json")
    state = build()
    out.write_text(json.dumps(state, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: " + ", ".join(f"{k}={len(v)}" for k, v in state.items() if isinstance(v, dict)))
