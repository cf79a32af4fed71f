"""Scenarios of it_helpdesk: hand-authored help desk tasks, each with a plausible wrong solution (WRONG).

`python environments/it_helpdesk/make_scenarios.py [--check]` gates them through the environment's generated server
and writes scenarios/it_helpdesk.jsonl only when all pass (envscaler_mcp.authoring.main; exit code 1 otherwise).
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
ENV_ID = "it_helpdesk"
scenario = partial(authoring.scenario, ENV_ID)


def build(state: dict) -> list[Scenario]:
    """All scenarios, each starting from `state` (the default state)."""
    out = []

    out.append(scenario(
        "Assign an access ticket",
        "Please assign ticket INC-3047 to agent AG05 (Lucia Fernandez) so someone picks it up today.",
        state,
        [item(1, "Has INC-3047 been assigned to AG05?",
              'return final_state["tickets"]["INC-3047"]["assignee_id"] == "AG05"'),
         item(2, "Has INC-3047 moved from new to assigned?",
              'return final_state["tickets"]["INC-3047"]["status"] == "assigned"'),
         item(3, "Have all other tickets kept their assignee?",
              'return all(t["assignee_id"] == initial_state["tickets"][k]["assignee_id"]\n'
              '           for k, t in final_state["tickets"].items() if k != "INC-3047" and k in initial_state["tickets"])',
              claims_change=False)],
        [call("assign_ticket", ticket_id="INC-3047", agent_id="AG05")]))

    out.append(scenario(
        "Resolve the docking station ticket",
        "Ticket INC-3021 is fixed: we updated the docking station firmware and both monitors work again. "
        "Please mark it resolved with that as the resolution.",
        state,
        [item(1, "Has INC-3021 been resolved?", 'return final_state["tickets"]["INC-3021"]["status"] == "resolved"'),
         item(2, "Has the resolution note mentioned the firmware update?",
              'note = final_state["tickets"]["INC-3021"]["resolution"] or ""\nreturn "firmware" in note.lower()'),
         item(3, "Has the resolved date been set to today?",
              'return final_state["tickets"]["INC-3021"]["resolved_date"] == final_state["today"]'),
         item(4, "Has no other ticket changed status?",
              'return all(t["status"] == initial_state["tickets"][k]["status"]\n'
              '           for k, t in final_state["tickets"].items() if k != "INC-3021" and k in initial_state["tickets"])',
              claims_change=False)],
        [call("resolve_ticket", ticket_id="INC-3021",
              resolution="Updated the docking station firmware; both monitors work again.")]))

    out.append(scenario(
        "Swap a failing laptop",
        "Tomasz Wojcik's laptop battery is dying (he opened a ticket about it today). We decided to swap the "
        "laptop: take his current one back as damaged so it goes to repair, give him one of the in-stock "
        "laptops, and close out his battery ticket as resolved by the swap. Ravi (AG02) handles it.",
        state,
        [item(1, "Has Tomasz's old laptop AST-2002 been taken back and sent to repair?",
              'a = final_state["assets"]["AST-2002"]\nreturn a["status"] == "in_repair" and a["assigned_to"] is None'),
         item(2, "Has Tomasz (E1002) received exactly one laptop that was in stock before?",
              'mine = [k for k, a in final_state["assets"].items() if a["assigned_to"] == "E1002" and a["asset_type"] == "laptop"]\n'
              'return len(mine) == 1 and mine[0] in initial_state["assets"] \\\n'
              '    and initial_state["assets"][mine[0]]["status"] == "in_stock" and final_state["assets"][mine[0]]["status"] == "in_use"'),
         item(3, "Has the battery ticket INC-3028 been resolved?",
              'return final_state["tickets"]["INC-3028"]["status"] == "resolved"'),
         item(4, "Has INC-3028 been handled by AG02?",
              'return final_state["tickets"]["INC-3028"]["assignee_id"] == "AG02"')],
        [call("search_employees", name="Tomasz"),
         call("list_tickets", requester_id="E1002", open_only=True),
         call("list_assets", employee_id="E1002", asset_type="laptop"),
         call("return_asset", asset_id="AST-2002", condition="damaged"),
         call("list_assets", status="in_stock", asset_type="laptop"),
         call("assign_asset", asset_id="AST-2050", employee_id="E1002"),
         call("assign_ticket", ticket_id="INC-3028", agent_id="AG02"),
         call("resolve_ticket", ticket_id="INC-3028", resolution="Swapped the laptop for AST-2050; old unit sent to repair.")]))

    out.append(scenario(
        "Cancel two requests, one already in progress",
        "This is Marcus Bell (E1004). I no longer need my tickets INC-3025 and INC-3026 - please cancel both. "
        "If one of them can't be cancelled any more, leave a comment on it from me saying I no longer need it, "
        "so the agent can wrap it up.",
        state,
        [item(1, "Has INC-3025 been cancelled?", 'return final_state["tickets"]["INC-3025"]["status"] == "cancelled"'),
         item(2, "Has INC-3026 (work already started) kept its in-progress status?",
              'return final_state["tickets"]["INC-3026"]["status"] == "in_progress"', claims_change=False),
         item(3, "Has Marcus added a public comment on INC-3026?",
              'old = set(initial_state["comments"])\n'
              'return any(c["ticket_id"] == "INC-3026" and c["author_id"] == "E1004" and not c["internal"]\n'
              '           for k, c in final_state["comments"].items() if k not in old)')],
        [call("get_ticket", ticket_id="INC-3025"),
         call("cancel_ticket", ticket_id="INC-3025", reason="Requester no longer needs CRM reporting access."),
         call("get_ticket", ticket_id="INC-3026"),
         call("add_comment", ticket_id="INC-3026", author_id="E1004",
              body="I no longer need this - feel free to close it.", internal=False)]))

    out.append(scenario(
        "Escalate the payroll outage",
        "The payroll application outage (INC-3024) blocks the March payroll run for the whole Finance team. "
        "Escalate it to P1 and get it assigned right away to someone in its queue who actually has capacity.",
        state,
        [item(1, "Has INC-3024 been raised to P1?", 'return final_state["tickets"]["INC-3024"]["priority"] == "P1"'),
         item(2, "Has the due date been recomputed to one day after creation (2026-03-16)?",
              'return final_state["tickets"]["INC-3024"]["due_date"] == "2026-03-16"'),
         item(3, "Has INC-3024 been assigned to AG04, the only active Q-SW agent with capacity?",
              't = final_state["tickets"]["INC-3024"]\nreturn t["assignee_id"] == "AG04" and t["status"] == "assigned"')],
        [call("get_ticket", ticket_id="INC-3024"),
         call("change_priority", ticket_id="INC-3024", priority="P1", reason="Blocks the March payroll run."),
         call("list_agents", queue_id="Q-SW", available_only=True),
         call("assign_ticket", ticket_id="INC-3024", agent_id="AG04")]))

    moves = {"INC-3029": "AG02", "INC-3031": "AG02", "INC-3030": "AG06", "INC-3032": "AG06"}
    out.append(scenario(
        "Cover an agent's leave",
        "Dana Okafor (AG01) starts parental leave tomorrow. Hand all of her open tickets to Ravi (AG02); "
        "whatever Ravi can't take should go to Samuel (AG06). Don't change the tickets' status.",
        state,
        [item(1, "Has Ravi (AG02) taken Dana's hardware tickets INC-3029 and INC-3031?",
              'return all(final_state["tickets"][t]["assignee_id"] == "AG02" for t in ("INC-3029", "INC-3031"))'),
         item(2, "Has Samuel (AG06) taken Dana's network tickets INC-3030 and INC-3032?",
              'return all(final_state["tickets"][t]["assignee_id"] == "AG06" for t in ("INC-3030", "INC-3032"))'),
         item(3, "Has Dana (AG01) been left with no open tickets?",
              'return not any(t["assignee_id"] == "AG01" and t["status"] in ("new", "assigned", "in_progress", "on_hold")\n'
              '               for t in final_state["tickets"].values())'),
         item(4, "Have the four tickets kept their status?",
              f'return all(final_state["tickets"][t]["status"] == initial_state["tickets"][t]["status"] for t in {sorted(moves)!r})',
              claims_change=False)],
        [call("list_tickets", assignee_id="AG01", open_only=True),
         call("bulk_reassign_tickets", from_agent_id="AG01", to_agent_id="AG02"),
         call("bulk_reassign_tickets", from_agent_id="AG01", to_agent_id="AG06")]))

    out.append(scenario(
        "Problems came back",
        "Hi, Daniel Kim from Operations here. Two of my old problems are back: the VPN keeps disconnecting "
        "(ticket INC-3022) and the warehouse label printer jams again (INC-3023). Please reopen them. If a "
        "ticket is too old to reopen, open a new hardware ticket for the printer instead, same priority as before.",
        state,
        [item(1, "Has INC-3022 been reopened?",
              't = final_state["tickets"]["INC-3022"]\nreturn t["status"] in ("new", "assigned") and t["reopen_count"] == 1'),
         item(2, "Has INC-3023 (resolved 12 days ago) stayed resolved?",
              'return final_state["tickets"]["INC-3023"]["status"] == "resolved"', claims_change=False),
         item(3, "Has a new P3 hardware ticket about the printer been opened for Daniel (E1006)?",
              'old = set(initial_state["tickets"])\n'
              'return any(t["requester_id"] == "E1006" and t["category"] == "hardware" and t["priority"] == "P3"\n'
              '           and "printer" in (t["title"] + " " + t["description"]).lower()\n'
              '           for k, t in final_state["tickets"].items() if k not in old)')],
        [call("get_ticket", ticket_id="INC-3022"),
         call("reopen_ticket", ticket_id="INC-3022", reason="VPN disconnects again every few minutes."),
         call("get_ticket", ticket_id="INC-3023"),
         call("create_ticket", requester_id="E1006", title="Warehouse label printer jams again",
              description="Same problem as INC-3023: the label printer jams on every batch.",
              category="hardware", priority="P3")]))

    out.append(scenario(
        "Offboard a departed employee",
        "Kevin Lindqvist left the company last week. Collect his devices: the laptop came back in good shape, "
        "the phone has a cracked screen. Also cancel his open laptop ticket, nobody needs it now.",
        state,
        [item(1, "Has Kevin's laptop AST-2029 gone back to stock?",
              'a = final_state["assets"]["AST-2029"]\nreturn a["status"] == "in_stock" and a["assigned_to"] is None'),
         item(2, "Has Kevin's phone AST-2047 gone to repair?",
              'a = final_state["assets"]["AST-2047"]\nreturn a["status"] == "in_repair" and a["assigned_to"] is None'),
         item(3, "Has Kevin's ticket INC-3027 been cancelled?",
              'return final_state["tickets"]["INC-3027"]["status"] == "cancelled"'),
         item(4, "Has no other ticket been cancelled?",
              'return all(t["status"] != "cancelled" or initial_state["tickets"].get(k, {}).get("status") == "cancelled"\n'
              '           for k, t in final_state["tickets"].items() if k != "INC-3027")', claims_change=False)],
        [call("search_employees", name="Kevin Lindqvist"),
         call("list_assets", employee_id="E1029"),
         call("return_asset", asset_id="AST-2029", condition="good"),
         call("return_asset", asset_id="AST-2047", condition="damaged"),
         call("list_tickets", requester_id="E1029", open_only=True),
         call("cancel_ticket", ticket_id="INC-3027", reason="Requester has left the company.")]))

    out.append(scenario(
        "Extra monitors",
        "Aisha Mensah (Marketing) is moving to a new desk and asked for two more monitors on top of the one "
        "she has. Issue her what the device policy allows from stock.",
        state,
        [item(1, "Has Aisha (E1003) ended up with exactly two monitors?",
              'return sum(1 for a in final_state["assets"].values() if a["assigned_to"] == "E1003" and a["asset_type"] == "monitor") == 2'),
         item(2, "Has her new monitor come from stock?",
              'new = [k for k, a in final_state["assets"].items() if a["assigned_to"] == "E1003" and a["asset_type"] == "monitor"\n'
              '       and initial_state["assets"][k]["assigned_to"] != "E1003"]\n'
              'return len(new) == 1 and initial_state["assets"][new[0]]["status"] == "in_stock"'),
         item(3, "Have exactly two of the three in-stock monitors stayed in stock?",
              'return sum(1 for a in final_state["assets"].values() if a["asset_type"] == "monitor" and a["status"] == "in_stock") == 2')],
        [call("search_employees", name="Aisha"),
         call("list_assets", employee_id="E1003", asset_type="monitor"),
         call("list_assets", status="in_stock", asset_type="monitor"),
         call("assign_asset", asset_id="AST-2057", employee_id="E1003")]))

    out.append(scenario(
        "Waiting on a part",
        "I'm Samuel (AG06). For ticket INC-3033 I've started the work and now need a replacement dock from the "
        "vendor. Record that I'm working on it, then put it on hold waiting for the part, and tell the requester "
        "in a comment that the new dock is on order.",
        state,
        [item(1, "Has INC-3033 been put on hold?", 'return final_state["tickets"]["INC-3033"]["status"] == "on_hold"'),
         item(2, "Has an internal note explaining the hold been added to INC-3033?",
              'old = set(initial_state["comments"])\n'
              'return any(c["ticket_id"] == "INC-3033" and c["internal"] for k, c in final_state["comments"].items() if k not in old)'),
         item(3, "Has Samuel told the requester in a public comment on INC-3033?",
              'old = set(initial_state["comments"])\n'
              'return any(c["ticket_id"] == "INC-3033" and not c["internal"] and c["author_id"] == "AG06"\n'
              '           for k, c in final_state["comments"].items() if k not in old)'),
         item(4, "Has INC-3033 stayed with AG06?", 'return final_state["tickets"]["INC-3033"]["assignee_id"] == "AG06"',
              claims_change=False)],
        [call("update_ticket_status", ticket_id="INC-3033", status="in_progress"),
         call("update_ticket_status", ticket_id="INC-3033", status="on_hold", note="Waiting for a replacement dock from the vendor."),
         call("add_comment", ticket_id="INC-3033", author_id="AG06",
              body="A replacement docking station is on order; we'll swap it as soon as it arrives.")]))

    out.append(scenario(
        "Misrouted ticket",
        "Ticket INC-3046 (emails to a partner bounce back) turned out to be the partner's firewall blocking our mail "
        "servers, so it's a network problem. Move it to the network queue and have Tariq Aziz (AG08) take it.",
        state,
        [item(1, "Has INC-3046 moved to the Network & VPN queue (Q-NET)?",
              'return final_state["tickets"]["INC-3046"]["queue_id"] == "Q-NET"'),
         item(2, "Has INC-3046 been assigned to Tariq Aziz (AG08)?",
              't = final_state["tickets"]["INC-3046"]\nreturn t["assignee_id"] == "AG08" and t["status"] == "assigned"'),
         item(3, "Has an internal note recorded the transfer on INC-3046?",
              'old = set(initial_state["comments"])\n'
              'return any(c["ticket_id"] == "INC-3046" and c["internal"] for k, c in final_state["comments"].items() if k not in old)')],
        [call("get_ticket", ticket_id="INC-3046"),
         call("list_queues"),
         call("transfer_ticket", ticket_id="INC-3046", queue_id="Q-NET",
              reason="Partner firewall blocks our mail servers; network issue."),
         call("assign_ticket", ticket_id="INC-3046", agent_id="AG08")]))

    out.append(scenario(
        "Retire old hardware",
        "Please retire the broken OptiPlex desktop AST-2062 that's sitting in repair, and Fatima Zahra's laptop "
        "AST-2015 as well - it's getting old. If the laptop can't be retired yet, leave it with her for now.",
        state,
        [item(1, "Has the desktop AST-2062 been retired?", 'return final_state["assets"]["AST-2062"]["status"] == "retired"'),
         item(2, "Has the laptop AST-2015 stayed in use with Fatima (E1015)?",
              'a = final_state["assets"]["AST-2015"]\nreturn a["status"] == "in_use" and a["assigned_to"] == "E1015"',
              claims_change=False),
         item(3, "Has Fatima's open docking ticket INC-3021 been left in progress?",
              'return final_state["tickets"]["INC-3021"]["status"] == "in_progress"', claims_change=False)],
        [call("get_asset", asset_id="AST-2062"),
         call("retire_asset", asset_id="AST-2062"),
         call("get_asset", asset_id="AST-2015"),
         call("list_tickets", keyword="dock", open_only=True)]))
    return out


# A plausible wrong solution per scenario title: replayed (failed calls ignored), it must leave at least
# one checklist item False, which shows the checklist catches that mistake.
WRONG: dict[str, list[ToolCall]] = {
    "Misrouted ticket": [call("assign_ticket", ticket_id="INC-3046", agent_id="AG08"),
                         call("assign_ticket", ticket_id="INC-3046", agent_id="AG03")],
    "Retire old hardware": [call("retire_asset", asset_id="AST-2062"),
                            call("return_asset", asset_id="AST-2015", condition="good"),
                            call("retire_asset", asset_id="AST-2015")],
    "Assign an access ticket": [call("assign_ticket", ticket_id="INC-3047", agent_id="AG04")],
    "Resolve the docking station ticket": [call("resolve_ticket", ticket_id="INC-3021", resolution="Fixed.")],
    "Swap a failing laptop": [call("return_asset", asset_id="AST-2002", condition="good"),
                              call("assign_asset", asset_id="AST-2050", employee_id="E1002"),
                              call("assign_ticket", ticket_id="INC-3028", agent_id="AG02"),
                              call("resolve_ticket", ticket_id="INC-3028", resolution="Swapped the laptop.")],
    "Cancel two requests, one already in progress": [
        call("cancel_ticket", ticket_id="INC-3025", reason="Not needed."),
        call("cancel_ticket", ticket_id="INC-3026", reason="Not needed.")],
    "Escalate the payroll outage": [call("change_priority", ticket_id="INC-3024", priority="P1", reason="Payroll."),
                                    call("assign_ticket", ticket_id="INC-3024", agent_id="AG03")],
    "Cover an agent's leave": [call("bulk_reassign_tickets", from_agent_id="AG01", to_agent_id="AG02")],
    "Problems came back": [call("reopen_ticket", ticket_id="INC-3022", reason="VPN drops again."),
                           call("reopen_ticket", ticket_id="INC-3023", reason="Printer jams again.")],
    "Offboard a departed employee": [call("return_asset", asset_id="AST-2029", condition="good"),
                                     call("return_asset", asset_id="AST-2047", condition="good"),
                                     call("cancel_ticket", ticket_id="INC-3027", reason="Left.")],
    "Extra monitors": [call("return_asset", asset_id="AST-2030", condition="good"),
                       call("assign_asset", asset_id="AST-2057", employee_id="E1003"),
                       call("assign_asset", asset_id="AST-2058", employee_id="E1003")],
    "Waiting on a part": [call("update_ticket_status", ticket_id="INC-3033", status="in_progress"),
                          call("update_ticket_status", ticket_id="INC-3033", status="on_hold", note="Dock on order."),
                          call("add_comment", ticket_id="INC-3033", author_id="AG06", body="Dock on order.", internal=True)],
}


# Questions answered by looking things up; checked on what the agent did and said (authoring.read_only).
READ_ONLY: list[dict[str, Any]] = [
    {
        "title": "Overdue security tickets",
        "task": "Quick check for the security lead: which tickets in the Security queue are past their due date "
                "right now, when was each due, and who is working on each of them?",
        "solution": [("list_tickets", {"queue_id": "Q-SEC", "overdue_only": True}),
                     ("list_agents", {"queue_id": "Q-SEC"})],
        "answer": "Two security tickets are overdue. INC-3048 (Suspicious phishing email) was due on 2026-03-14 "
                  "and is still unassigned. INC-3040 (USB device blocked) was due on 2026-03-15 and is assigned "
                  "to Tariq Aziz.",
        "checks": [
            ("Has the agent said two security tickets are overdue?", "says(transcript, 2)"),
            ("Has the agent said INC-3048 was due on 2026-03-14 and has no assignee?",
             "says(transcript, 'INC-3048', '2026-03-14') and (says(transcript, 'unassigned') "
             "or says(transcript, 'not assigned') or says(transcript, 'no one') or says(transcript, 'nobody'))"),
            ("Has the agent said INC-3040 was due on 2026-03-15 and is with Tariq Aziz?",
             "says(transcript, 'INC-3040', '2026-03-15', 'Tariq Aziz')"),
            ("Has the agent listed the Security queue's tickets?",
             "called(transcript, 'list_tickets', queue_id='Q-SEC') or called(transcript, 'list_tickets', "
             "category='security')"),
        ],
    },
    {
        "title": "Where is my access request?",
        "task": "Hi, this is Tomasz Wojcik (tomasz.wojcik@brightwater.example). A while ago I asked for access to "
                "a shared drive. What is the status of that ticket, who is handling it, and is it late?",
        "solution": [("get_employee", {"email": "tomasz.wojcik@brightwater.example"}),
                     ("list_tickets", {"requester_id": "E1002", "open_only": True}),
                     ("list_agents", {"queue_id": "Q-ACC"})],
        "answer": "Your ticket INC-3042 (Need access to shared drive) is in progress with Lucia Fernandez. It was "
                  "due on 2026-03-12, so it is 4 days overdue.",
        "checks": [
            ("Has the agent said ticket INC-3042 is in progress?",
             "says(transcript, 'INC-3042') and (says(transcript, 'in progress') "
             "or says(transcript, 'in_progress'))"),
            ("Has the agent said Lucia Fernandez is handling it?", "says(transcript, 'Lucia Fernandez')"),
            ("Has the agent said it was due on 2026-03-12 and is 4 days overdue?",
             "says(transcript, '2026-03-12', 4)"),
            ("Has the agent looked up Tomasz's tickets?",
             "called(transcript, 'list_tickets', requester_id='E1002') or called(transcript, 'get_ticket', "
             "ticket_id='INC-3042')"),
        ],
    },
]


if __name__ == "__main__":
    state = authoring.default_state(HERE)
    sys.exit(authoring.main(HERE, build(state) + authoring.read_only(ENV_ID, READ_ONLY, state), WRONG))
