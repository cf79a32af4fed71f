"""Scenarios of flight_bookings: hand-authored airline reservation tasks, each with a plausible wrong solution (WRONG).

`python environments/flight_bookings/make_scenarios.py [--check]` gates them through the environment's generated server
and writes scenarios/flight_bookings.jsonl only when all pass (envscaler_mcp.authoring.main; exit code 1 otherwise).
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

from envscaler_mcp import authoring
from envscaler_mcp.authoring import call, item
from envscaler_mcp.scenario.models import Scenario, ToolCall

HERE = Path(__file__).resolve().parent
ENV_ID = "flight_bookings"
scenario = partial(authoring.scenario, ENV_ID)


def build(state: dict) -> list[Scenario]:
    """All scenarios, each starting from `state` (the default state)."""
    fl = state["flights"]
    out = []

    out.append(scenario(
        "Pick a window seat",
        "Please give ticket T-10001 seat 12A.",
        state,
        [item(1, "Has T-10001 got seat 12A?", 'return final_state["tickets"]["T-10001"]["seat"] == "12A"'),
         item(2, "Has T-10001 stayed on flight FL-1007?", 'return final_state["tickets"]["T-10001"]["flight_id"] == "FL-1007"',
              claims_change=False),
         item(3, "Has no payment been added?", 'return len(final_state["payments"]) == len(initial_state["payments"])',
              claims_change=False)],
        [call("select_seat", ticket_id="T-10001", seat="12A")]))

    out.append(scenario(
        "Add a checked bag",
        "Add one checked bag to ticket T-10002, please.",
        state,
        [item(1, "Has T-10002 got one checked bag?", 'return final_state["tickets"]["T-10002"]["checked_bags"] == 1'),
         item(2, "Has a 40.00 bag fee been charged for T-10002 (basic fares include no bag)?",
              'old = set(initial_state["payments"])\n'
              'return any(p["ticket_id"] == "T-10002" and p["kind"] == "bag_fee" and p["amount"] == 40.0\n'
              '           for k, p in final_state["payments"].items() if k not in old)'),
         item(3, "Have the other tickets kept their bag counts?",
              'return all(t["checked_bags"] == initial_state["tickets"][k]["checked_bags"]\n'
              '           for k, t in final_state["tickets"].items() if k != "T-10002" and k in initial_state["tickets"])',
              claims_change=False)],
        [call("add_checked_bags", ticket_id="T-10002", count=1)]))

    price = fl["FL-1009"]["fares"]["economy_standard"]
    out.append(scenario(
        "Book a trip to Amsterdam",
        "Hi, this is Hannah Weiss (hannah.weiss@mail.example). Book me on the Lisbon to Amsterdam flight on "
        "2026-06-27, standard economy, paid by card, and I'd like a window seat.",
        state,
        [item(1, "Has a confirmed booking been made for Hannah (P-0001) on FL-1009 in economy_standard?",
              'old = set(initial_state["tickets"])\n'
              'return any(t["passenger_id"] == "P-0001" and t["flight_id"] == "FL-1009" and t["fare_class"] == "economy_standard"\n'
              '           and t["status"] == "confirmed" for k, t in final_state["tickets"].items() if k not in old)'),
         item(2, "Has Hannah's new ticket got a window seat (A or F)?",
              'old = set(initial_state["tickets"])\n'
              'new = [t for k, t in final_state["tickets"].items() if k not in old and t["passenger_id"] == "P-0001"]\n'
              'return len(new) == 1 and bool(new[0]["seat"]) and new[0]["seat"][-1] in "AF"'),
         item(3, f"Has the fare ({price:.2f}) been charged by card?",
              'old = set(initial_state["payments"])\n'
              f'return any(p["kind"] == "fare" and p["amount"] == {price!r} and p["method"] == "card"\n'
              '           for k, p in final_state["payments"].items() if k not in old)')],
        [call("get_passenger", email="hannah.weiss@mail.example"),
         call("search_flights", origin="LIS", destination="AMS", departure_date="2026-06-27"),
         call("create_booking", contact_passenger_id="P-0001", passenger_ids=["P-0001"], flight_ids=["FL-1009"],
              fare_class="economy_standard", payment_method="card"),
         call("get_seat_map", flight_id="FL-1009", cabin="economy"),
         call("select_seat", ticket_id="T-10095", seat="4A")]))

    out.append(scenario(
        "Travel later, keep the partner's plan",
        "Lucas Ferreira here. I have to travel later: move my ticket on the 2026-06-20 Lisbon to Madrid flight to the "
        "flight on 2026-06-24; Marta stays on the 20th. And please also move Marta's return ticket T-10005 from June 25 "
        "to the June 29 return flight, if her fare allows it.",
        state,
        [item(1, "Has Lucas's ticket T-10003 moved to FL-1021 (2026-06-24)?",
              'return final_state["tickets"]["T-10003"]["flight_id"] == "FL-1021"'),
         item(2, "Has the 60.00 change fee been charged for T-10003?",
              'old = set(initial_state["payments"])\n'
              'return any(p["ticket_id"] == "T-10003" and p["kind"] == "change" and p["amount"] == 60.0\n'
              '           for k, p in final_state["payments"].items() if k not in old)'),
         item(3, "Has Marta's outbound T-10004 stayed on FL-1019?",
              'return final_state["tickets"]["T-10004"]["flight_id"] == "FL-1019"', claims_change=False),
         item(4, "Has Marta's basic-fare return T-10005 stayed on FL-1022 (basic fares cannot be changed)?",
              'return final_state["tickets"]["T-10005"]["flight_id"] == "FL-1022"', claims_change=False)],
        [call("find_passengers", last_name="Ferreira", first_name="Lucas"),
         call("list_bookings", passenger_id="P-0002"),
         call("get_booking", booking_id="BK-2003"),
         call("search_flights", origin="LIS", destination="MAD", departure_date="2026-06-24"),
         call("change_flight", ticket_id="T-10003", new_flight_id="FL-1021"),
         call("quote_change", ticket_id="T-10005", new_flight_id="FL-1024")]))

    out_fare = fl["FL-1023"]["fares"]["economy_standard"]
    back_fare = fl["FL-1026"]["fares"]["economy_standard"]
    total = 3 * (out_fare + back_fare)
    out.append(scenario(
        "Family trip to Madrid",
        "Olivia Brooks speaking. Please book my husband Noah, our daughter Lily and me from Lisbon to Madrid on "
        "2026-06-28 and back on 2026-07-03, all in one booking, standard economy for everyone, paid by my card. Lily has no profile yet: "
        "Lily Brooks, born 2019-04-12, use my email olivia.brooks+lily@mail.example for her.",
        state,
        [item(1, "Has a profile been created for Lily Brooks born 2019-04-12?",
              'return any(p["first_name"] == "Lily" and p["last_name"] == "Brooks" and p["date_of_birth"] == "2019-04-12"\n'
              '           for k, p in final_state["passengers"].items() if k not in initial_state["passengers"])'),
         item(2, "Has one booking been made with six economy_standard tickets (3 on FL-1023, 3 on FL-1026)?",
              'new = [b for k, b in final_state["bookings"].items() if k not in initial_state["bookings"]]\n'
              'if len(new) != 1 or new[0]["contact_passenger_id"] != "P-0004":\n'
              '    return False\n'
              'ts = [t for t in final_state["tickets"].values() if t["booking_id"] == new[0]["booking_id"]]\n'
              'return len(ts) == 6 and all(t["fare_class"] == "economy_standard" for t in ts) \\\n'
              '    and sorted(t["flight_id"] for t in ts) == ["FL-1023"] * 3 + ["FL-1026"] * 3'),
         item(3, "Have Olivia (P-0004) and Noah (P-0005) both got tickets on both flights?",
              'old = set(initial_state["tickets"])\n'
              'got = {(t["passenger_id"], t["flight_id"]) for k, t in final_state["tickets"].items() if k not in old}\n'
              'return all((p, f) in got for p in ("P-0004", "P-0005") for f in ("FL-1023", "FL-1026"))'),
         item(4, f"Has the total {total:.2f} been charged by card?",
              'old = set(initial_state["payments"])\n'
              f'return any(p["kind"] == "fare" and p["amount"] == {total!r} and p["method"] == "card"\n'
              '           for k, p in final_state["payments"].items() if k not in old)')],
        [call("find_passengers", last_name="Brooks"),
         call("add_passenger", first_name="Lily", last_name="Brooks", date_of_birth="2019-04-12",
              email="olivia.brooks+lily@mail.example"),
         call("search_flights", origin="LIS", destination="MAD", departure_date="2026-06-28"),
         call("search_flights", origin="MAD", destination="LIS", departure_date="2026-07-03"),
         call("create_booking", contact_passenger_id="P-0004", passenger_ids=["P-0004", "P-0005", "P-0041"],
              flight_ids=["FL-1023", "FL-1026"], fare_class="economy_standard", payment_method="card")]))

    out.append(scenario(
        "Our Paris flight was cancelled",
        "Sofia Alves here, booking BK-2005. You cancelled our 2026-06-20 flight to Paris. Please put me on the next "
        "Lisbon to Paris flight at no extra cost; my husband Pedro can't travel later, so cancel his ticket and refund it.",
        state,
        [item(1, "Has Sofia's ticket T-10006 moved to the next flight, FL-1035 (2026-06-24)?",
              'return final_state["tickets"]["T-10006"]["flight_id"] == "FL-1035" and final_state["tickets"]["T-10006"]["status"] == "confirmed"'),
         item(2, "Has the rebooking been free (no charge on booking BK-2005)?",
              'old = set(initial_state["payments"])\n'
              'return not any(p["booking_id"] == "BK-2005" and p["amount"] > 0 for k, p in final_state["payments"].items() if k not in old)',
              claims_change=False),
         item(3, "Has Pedro's ticket T-10007 been cancelled?",
              'return final_state["tickets"]["T-10007"]["status"] == "cancelled"'),
         item(4, "Has Pedro's fare of 105.00 been refunded to the card?",
              'old = set(initial_state["payments"])\n'
              'return any(p["ticket_id"] == "T-10007" and p["kind"] == "refund" and p["amount"] == -105.0 and p["method"] == "card"\n'
              '           for k, p in final_state["payments"].items() if k not in old)')],
        [call("get_booking", booking_id="BK-2005"),
         call("search_flights", origin="LIS", destination="CDG"),
         call("change_flight", ticket_id="T-10006", new_flight_id="FL-1035"),
         call("cancel_ticket", ticket_id="T-10007")]))

    out.append(scenario(
        "Booked by mistake",
        "Ahmed Karim (ahmed.karim@mail.example). This morning I booked a return trip to Amsterdam by mistake - "
        "cancel that whole booking and refund it. I also have a Dublin to Lisbon ticket on June 29 I might not use: "
        "cancel it too, but only if I'd get at least some money back; otherwise leave it.",
        state,
        [item(1, "Has today's booking BK-2006 been cancelled?",
              'return final_state["bookings"]["BK-2006"]["status"] == "cancelled"'),
         item(2, "Has the full 310.00 been refunded to the card (24-hour rule)?",
              'old = set(initial_state["payments"])\n'
              'refunds = [p["amount"] for k, p in final_state["payments"].items() if k not in old\n'
              '           and p["booking_id"] == "BK-2006" and p["kind"] == "refund" and p["method"] == "card"]\n'
              'return sum(refunds) == -310.0'),
         item(3, "Has the non-refundable basic ticket T-10010 been left confirmed?",
              'return final_state["tickets"]["T-10010"]["status"] == "confirmed"', claims_change=False)],
        [call("get_passenger", email="ahmed.karim@mail.example"),
         call("list_bookings", passenger_id="P-0006"),
         call("get_booking", booking_id="BK-2006"),
         call("cancel_booking", booking_id="BK-2006"),
         call("get_booking", booking_id="BK-2007"),
         call("get_fare_rules", fare_class="economy_basic")]))

    out.append(scenario(
        "Check in with three bags",
        "Jonas Eriksen here, I fly to Madrid tomorrow (ticket T-10011). Check me in and add three checked bags. "
        "I'm a gold member, so I expect only what's beyond my allowance to be charged.",
        state,
        [item(1, "Has T-10011 been checked in with a seat?",
              't = final_state["tickets"]["T-10011"]\nreturn t["status"] == "checked_in" and bool(t["seat"])'),
         item(2, "Has T-10011 got three checked bags?", 'return final_state["tickets"]["T-10011"]["checked_bags"] == 3'),
         item(3, "Has exactly one bag (40.00) been charged, the fare and gold allowance covering two?",
              'old = set(initial_state["payments"])\n'
              'fees = [p["amount"] for k, p in final_state["payments"].items() if k not in old and p["ticket_id"] == "T-10011"]\n'
              'return fees == [40.0]')],
        [call("get_booking", booking_id="BK-2008"),
         call("check_in", ticket_id="T-10011"),
         call("add_checked_bags", ticket_id="T-10011", count=3)]))

    up = fl["FL-1021"]["fares"]["business_flex"] - 205.0
    out.append(scenario(
        "Upgrade to business",
        "Chiara Ricci, ticket T-10012. Upgrade me to business on that flight if a seat is available, and I'd like "
        "seat 1A.",
        state,
        [item(1, "Has T-10012 been upgraded to business_flex?",
              'return final_state["tickets"]["T-10012"]["fare_class"] == "business_flex"'),
         item(2, "Has T-10012 got seat 1A?", 'return final_state["tickets"]["T-10012"]["seat"] == "1A"'),
         item(3, f"Has the fare difference {up:.2f} been charged?",
              'old = set(initial_state["payments"])\n'
              f'return any(p["ticket_id"] == "T-10012" and p["kind"] == "upgrade" and p["amount"] == {up!r}\n'
              '           for k, p in final_state["payments"].items() if k not in old)')],
        [call("get_flight", flight_id="FL-1021"),
         call("get_seat_map", flight_id="FL-1021", cabin="business"),
         call("upgrade_cabin", ticket_id="T-10012"),
         call("select_seat", ticket_id="T-10012", seat="1A")]))

    std = fl["FL-1063"]["fares"]["economy_standard"]
    out.append(scenario(
        "Spend my travel credit",
        "Yara Haddad (yara.haddad@mail.example). I want to fly Madrid to Rome on 2026-06-26 using my travel credit. "
        "Book flex economy if my credit covers it, otherwise standard economy.",
        state,
        [item(1, "Has Yara (P-0013) been booked on FL-1063 in economy_standard?",
              'old = set(initial_state["tickets"])\n'
              'return any(t["passenger_id"] == "P-0013" and t["flight_id"] == "FL-1063" and t["fare_class"] == "economy_standard"\n'
              '           for k, t in final_state["tickets"].items() if k not in old)'),
         item(2, "Has the booking been paid with travel credit?",
              'new = [b for k, b in final_state["bookings"].items() if k not in initial_state["bookings"]]\n'
              'return len(new) == 1 and new[0]["payment_method"] == "travel_credit"'),
         item(3, f"Has her credit dropped from 200.00 to {200.0 - std:.2f}?",
              f'return final_state["passengers"]["P-0013"]["credit_balance"] == {200.0 - std!r}'),
         item(4, "Has no flex ticket been booked for her?",
              'return not any(t["passenger_id"] == "P-0013" and t["fare_class"] == "economy_flex" for t in final_state["tickets"].values())',
              claims_change=False)],
        [call("get_passenger", email="yara.haddad@mail.example"),
         call("search_flights", origin="MAD", destination="FCO", departure_date="2026-06-26"),
         call("create_booking", contact_passenger_id="P-0013", passenger_ids=["P-0013"], flight_ids=["FL-1063"],
              fare_class="economy_standard", payment_method="travel_credit")]))

    out.append(scenario(
        "Cancel for travel credit",
        "Emma Dubois here. I can't make my June 23 Amsterdam trip (ticket T-10001) - please cancel it; travel credit "
        "is fine. And update my phone number to +351 912 555 010.",
        state,
        [item(1, "Has T-10001 been cancelled?", 'return final_state["tickets"]["T-10001"]["status"] == "cancelled"'),
         item(2, "Has Emma (P-0011) received 105.00 travel credit (155.00 minus the 50.00 fee)?",
              'return final_state["passengers"]["P-0011"]["credit_balance"] == 105.0'),
         item(3, "Has Emma's phone number been updated?",
              'return final_state["passengers"]["P-0011"]["phone"] == "+351 912 555 010"')],
        [call("get_booking", booking_id="BK-2001"),
         call("get_fare_rules", fare_class="economy_standard"),
         call("cancel_ticket", ticket_id="T-10001"),
         call("update_contact", passenger_id="P-0011", phone="+351 912 555 010")]))

    out.append(scenario(
        "Seat and bag on a basic fare",
        "Marta Ferreira. On my return ticket T-10005 I'd like seat 11A and one checked bag, please. Don't change my "
        "ticket type for it.",
        state,
        [item(1, "Has T-10005 got one checked bag?", 'return final_state["tickets"]["T-10005"]["checked_bags"] == 1'),
         item(2, "Has the 40.00 bag fee been charged for T-10005?",
              'old = set(initial_state["payments"])\n'
              'return any(p["ticket_id"] == "T-10005" and p["kind"] == "bag_fee" and p["amount"] == 40.0\n'
              '           for k, p in final_state["payments"].items() if k not in old)'),
         item(3, "Has T-10005 kept its basic fare (no seat selection, no upgrade)?",
              't = final_state["tickets"]["T-10005"]\nreturn t["fare_class"] == "economy_basic" and t["seat"] is None',
              claims_change=False)],
        [call("get_booking", booking_id="BK-2004"),
         call("get_fare_rules", fare_class="economy_basic"),
         call("add_checked_bags", ticket_id="T-10005", count=1)]))
    return out


# A plausible wrong solution per scenario title: replayed (failed calls ignored), it must leave at least
# one checklist item False, which shows the checklist catches that mistake.
WRONG: dict[str, list[ToolCall]] = {
    "Cancel for travel credit": [call("cancel_ticket", ticket_id="T-10001")],
    "Seat and bag on a basic fare": [call("upgrade_cabin", ticket_id="T-10005"),
                                     call("select_seat", ticket_id="T-10005", seat="1A"),
                                     call("add_checked_bags", ticket_id="T-10005", count=1)],
    "Pick a window seat": [call("select_seat", ticket_id="T-10001", seat="12F")],
    "Add a checked bag": [call("add_checked_bags", ticket_id="T-10002", count=2)],
    "Book a trip to Amsterdam": [call("create_booking", contact_passenger_id="P-0001", passenger_ids=["P-0001"],
                                      flight_ids=["FL-1009"], fare_class="economy_standard", payment_method="card"),
                                 call("select_seat", ticket_id="T-10095", seat="4C")],
    "Travel later, keep the partner's plan": [call("change_flight", ticket_id="T-10003", new_flight_id="FL-1021"),
                                              call("change_flight", ticket_id="T-10004", new_flight_id="FL-1021")],
    "Family trip to Madrid": [
        call("add_passenger", first_name="Lily", last_name="Brooks", date_of_birth="2019-04-12",
             email="olivia.brooks+lily@mail.example"),
        call("create_booking", contact_passenger_id="P-0004", passenger_ids=["P-0004", "P-0005", "P-0041"],
             flight_ids=["FL-1023"], fare_class="economy_standard"),
        call("create_booking", contact_passenger_id="P-0004", passenger_ids=["P-0004", "P-0005", "P-0041"],
             flight_ids=["FL-1026"], fare_class="economy_standard")],
    "Our Paris flight was cancelled": [call("cancel_booking", booking_id="BK-2005")],
    "Booked by mistake": [call("cancel_booking", booking_id="BK-2006"), call("cancel_ticket", ticket_id="T-10010")],
    "Check in with three bags": [call("check_in", ticket_id="T-10011"),
                                 call("add_checked_bags", ticket_id="T-10011", count=2)],
    "Upgrade to business": [call("upgrade_cabin", ticket_id="T-10012"), call("select_seat", ticket_id="T-10012", seat="2A")],
    "Spend my travel credit": [call("create_booking", contact_passenger_id="P-0013", passenger_ids=["P-0013"],
                                    flight_ids=["FL-1063"], fare_class="economy_standard", payment_method="card")],
}


# Questions answered by looking things up; checked on what the agent did and said (authoring.read_only).
READ_ONLY: list[dict[str, Any]] = [
    {
        "title": "What would moving my flight cost?",
        "task": "This is Ahmed Karim, booking BK-2006. I'd like to fly home from Amsterdam on June 20 instead of "
                "June 24, on the same flight number. What would that change cost me in total, and how is that "
                "made up? Please only tell me; don't change anything yet.",
        "solution": [("get_booking", {"booking_id": "BK-2006"}),
                     ("get_flight", {"flight_number": "MR205", "departure_date": "2026-06-20"}),
                     ("quote_change", {"ticket_id": "T-10009", "new_flight_id": "FL-1006"})],
        "answer": "Moving your MR205 flight to 2026-06-20 would cost 65.00 in total: a 60.00 change fee plus a "
                  "5.00 fare difference. I have not changed anything.",
        "checks": [
            ("Has the agent quoted the move of MR205 to 2026-06-20?", "says(transcript, 'MR205', '2026-06-20')"),
            ("Has the agent given the total, 65.00?", "says(transcript, 65)"),
            ("Has the agent broken it down: a 60.00 change fee and a 5.00 fare difference?",
             "says(transcript, 60, 5)"),
            ("Has the agent priced the change of ticket T-10009 to flight FL-1006?",
             "called(transcript, 'quote_change', ticket_id='T-10009', new_flight_id='FL-1006')"),
        ],
    },
    {
        "title": "Standard or flex economy?",
        "task": "I'm choosing between an economy standard and an economy flex fare. What does each charge if I "
                "change the flight, and what happens if I cancel?",
        "solution": [("get_fare_rules", {"fare_class": "economy_standard"}),
                     ("get_fare_rules", {"fare_class": "economy_flex"})],
        "answer": "With economy standard a change costs a 60.00 fee, and if you cancel you pay a 50.00 fee and "
                  "get the rest back as travel credit. With economy flex changes are free and a cancellation is "
                  "refunded in full.",
        "checks": [
            ("Has the agent said an economy standard change costs a 60.00 fee?", "says(transcript, 'standard', 60)"),
            ("Has the agent said cancelling economy standard costs 50.00, the rest refunded as credit?",
             "says(transcript, 50, 'credit')"),
            ("Has the agent said economy flex changes are free and cancellations refunded in full?",
             "says(transcript, 'flex', 'free', 'full')"),
            ("Has the agent looked up the fare rules?", "called(transcript, 'get_fare_rules')"),
        ],
    },
]


if __name__ == "__main__":
    state = authoring.default_state(HERE)
    sys.exit(authoring.main(HERE, build(state) + authoring.read_only(ENV_ID, READ_ONLY, state), WRONG))
