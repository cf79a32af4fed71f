"""Scenarios of cloud_storage: hand-authored cloud drive tasks, each with a plausible wrong solution (WRONG).

`python environments/cloud_storage/make_scenarios.py [--check]` gates them through the environment's generated server
and writes scenarios/cloud_storage.jsonl only when all pass (envscaler_mcp.authoring.main; exit code 1 otherwise).
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
ENV_ID = "cloud_storage"
scenario = partial(authoring.scenario, ENV_ID)


def build(state: dict) -> list[Scenario]:
    """All scenarios, each starting from `state` (the default state)."""
    out = []

    out.append(scenario(
        "Share the budget read-only",
        "I'm Maya Chen (user U01). Please share my file FIL-0009 (Q3 budget.xlsx) with dana.whitfield@lumen.example "
        "as a viewer.",
        state,
        [item(1, "Has Dana (U06) been given viewer access on FIL-0009?",
              'return any(s["item_id"] == "FIL-0009" and s["user_id"] == "U06" and s["role"] == "viewer"\n'
              '           for s in final_state["shares"].values())'),
         item(2, "Has Dana not been given edit rights on FIL-0009?",
              'return not any(s["item_id"] == "FIL-0009" and s["user_id"] == "U06" and s["role"] == "editor"\n'
              '               for s in final_state["shares"].values())', claims_change=False),
         item(3, "Has exactly one share been added?",
              'return len(final_state["shares"]) == len(initial_state["shares"]) + 1')],
        [call("share_item", user_id="U01", item_id="FIL-0009", grantee_email="dana.whitfield@lumen.example",
              role="viewer")]))

    out.append(scenario(
        "Restore a deleted press kit",
        "I'm Dana Whitfield (U06). I deleted FIL-0041 (press-kit.pdf) by mistake a few days ago. Please restore it "
        "from the trash.",
        state,
        [item(1, "Has press-kit.pdf (FIL-0041) left the trash?",
              'f = final_state["files"].get("FIL-0041")\nreturn f is not None and f["trashed"] is False and f["trashed_date"] is None'),
         item(2, "Has it gone back to its Documents folder (FLD-035)?",
              'f = final_state["files"].get("FIL-0041")\nreturn f is not None and f["folder_id"] == "FLD-035"', claims_change=False),
         item(3, "Has everything else in the trash stayed there?",
              'return all(final_state["files"].get(k, {}).get("trashed") for k, f in initial_state["files"].items()\n'
              '           if f["trashed"] and k != "FIL-0041")', claims_change=False)],
        [call("restore_item", user_id="U06", item_id="FIL-0041")]))

    out.append(scenario(
        "Upload that needs space",
        "Hi, Sara Lindgren here (sara.lindgren@lumen.example). I need to upload drone-footage.mp4 (350000 KB, "
        "video/mp4) into my Videos folder. I'm on the free plan and nearly full - if it doesn't fit, clear out my "
        "trash to make room, but don't delete anything that isn't already in the trash.",
        state,
        [item(1, "Has drone-footage.mp4 (350000 KB) been uploaded to Sara's Videos folder FLD-029?",
              'return any(f["name"] == "drone-footage.mp4" and f["folder_id"] == "FLD-029" and f["size_kb"] == 350000\n'
              '           and f["owner_id"] == "U03" and not f["trashed"] for f in final_state["files"].values())'),
         item(2, "Has Sara's trash been emptied (the two interview takes deleted)?",
              'return "FIL-0027" not in final_state["files"] and "FIL-0028" not in final_state["files"]'),
         item(3, "Has every file Sara had outside the trash been kept?",
              'return all(k in final_state["files"] and not final_state["files"][k]["trashed"]\n'
              '           for k, f in initial_state["files"].items() if f["owner_id"] == "U03" and not f["trashed"])',
              claims_change=False)],
        [call("get_user", email="sara.lindgren@lumen.example"),
         call("get_storage_usage", user_id="U03"),
         call("list_trash", user_id="U03"),
         call("empty_trash", user_id="U03"),
         call("search_items", name="Videos", owner_id="U03", kind="folder"),
         call("upload_file", user_id="U03", folder_id="FLD-029", name="drone-footage.mp4", size_kb=350000,
              mime_type="video/mp4")]))

    out.append(scenario(
        "Collaborators on the campaign folder",
        "Maya Chen (U01) here. Nora Quinn and Alicia Park from our client Northpeak should both be able to edit my "
        "'Campaign Assets' folder. If Alicia can't get edit rights, give her the most access she is allowed.",
        state,
        [item(1, "Has Nora Quinn (U13) got editor access on Campaign Assets (FLD-025)?",
              'return any(s["item_id"] == "FLD-025" and s["user_id"] == "U13" and s["role"] == "editor"\n'
              '           for s in final_state["shares"].values())'),
         item(2, "Has Alicia Park (U16) got commenter access on Campaign Assets?",
              'return any(s["item_id"] == "FLD-025" and s["user_id"] == "U16" and s["role"] == "commenter"\n'
              '           for s in final_state["shares"].values())'),
         item(3, "Has the external user Alicia been kept from editor rights anywhere?",
              'return not any(s["user_id"] == "U16" and s["role"] == "editor" for s in final_state["shares"].values())',
              claims_change=False)],
        [call("search_items", name="Campaign Assets", owner_id="U01", kind="folder"),
         call("search_users", name="Nora"),
         call("search_users", name="Alicia Park"),
         call("share_item", user_id="U01", item_id="FLD-025", grantee_email="nora.quinn@lumen.example", role="editor"),
         call("share_item", user_id="U01", item_id="FLD-025", grantee_email="alicia.park@northpeak.example",
              role="commenter")]))

    out.append(scenario(
        "Bring back a trashed folder",
        "Leo Fischer (U02) here. Yesterday I deleted my 'Contracts 2025' folder by accident - please bring it back "
        "with everything that was in it. The 'old draft.docx' I deleted on purpose last week, so leave that one in "
        "the trash. Also rename 'Northpeak SOW-2.pdf' in there to 'Northpeak SOW-2 (signed).pdf'.",
        state,
        [item(1, "Has the Contracts 2025 folder (FLD-027) been restored?",
              'return final_state["folders"]["FLD-027"]["trashed"] is False'),
         item(2, "Have the four contract files come back with it?",
              'return all(not final_state["files"][k]["trashed"] for k in ("FIL-0014", "FIL-0015", "FIL-0016", "FIL-0017"))'),
         item(3, "Has 'old draft.docx' (FIL-0013) stayed in the trash?",
              'return final_state["files"]["FIL-0013"]["trashed"] is True', claims_change=False),
         item(4, "Has the SOW been renamed to 'Northpeak SOW-2 (signed).pdf'?",
              'return final_state["files"]["FIL-0015"]["name"] == "Northpeak SOW-2 (signed).pdf"')],
        [call("list_trash", user_id="U02"),
         call("restore_item", user_id="U02", item_id="FLD-027"),
         call("list_folder", folder_id="FLD-027"),
         call("rename_item", user_id="U02", item_id="FIL-0015", new_name="Northpeak SOW-2 (signed).pdf")]))

    out.append(scenario(
        "Roll back a broken spreadsheet",
        "Omar Haddad (U04). Someone saved a broken copy over my pricing.xlsx in the Sales folder - the latest version "
        "is only a few KB. Roll it back to the last good version (the one just before), and give Priya Nair edit "
        "access to that file so she can update the prices. Her access to the rest of Sales should stay as it is.",
        state,
        [item(1, "Has pricing.xlsx (FIL-0030) got version 3's content (355 KB) back as its current version?",
              'f = final_state["files"]["FIL-0030"]\nreturn f["size_kb"] == 355 and f["versions"][-1]["size_kb"] == 355'),
         item(2, "Has the version history been kept (five versions now)?",
              'return [v["version_number"] for v in final_state["files"]["FIL-0030"]["versions"]] == [1, 2, 3, 4, 5]'),
         item(3, "Has Priya (U09) got editor access on FIL-0030?",
              'return any(s["item_id"] == "FIL-0030" and s["user_id"] == "U09" and s["role"] == "editor"\n'
              '           for s in final_state["shares"].values())'),
         item(4, "Has Priya's access to the Sales folder stayed viewer?",
              'return any(s["item_id"] == "FLD-031" and s["user_id"] == "U09" and s["role"] == "viewer"\n'
              '           for s in final_state["shares"].values())', claims_change=False)],
        [call("search_items", name="pricing.xlsx", owner_id="U04"),
         call("list_versions", file_id="FIL-0030"),
         call("restore_version", user_id="U04", file_id="FIL-0030", version_number=3),
         call("share_item", user_id="U04", item_id="FIL-0030", grantee_email="priya.nair@lumen.example", role="editor")]))

    reports = ["FIL-0043", "FIL-0044", "FIL-0045", "FIL-0046"]
    out.append(scenario(
        "Archive last year's reports",
        "Ines Carvalho (U07). In my Reports folder, make a subfolder called 'Archive 2025' and move all four 2025 "
        "quarterly reports into it. The 2026 report stays where it is.",
        state,
        [item(1, "Has an 'Archive 2025' folder been created inside Reports (FLD-036), owned by Ines?",
              'return any(f["name"] == "Archive 2025" and f["parent_id"] == "FLD-036" and f["owner_id"] == "U07"\n'
              '           and not f["trashed"] for f in final_state["folders"].values())'),
         item(2, "Have the four 2025 reports been moved into it?",
              'arch = [k for k, f in final_state["folders"].items() if f["name"] == "Archive 2025" and f["parent_id"] == "FLD-036"]\n'
              f'return len(arch) == 1 and all(final_state["files"][k]["folder_id"] == arch[0] for k in {reports!r})'),
         item(3, "Has the Q1 2026 report (FIL-0047) stayed in Reports?",
              'return final_state["files"]["FIL-0047"]["folder_id"] == "FLD-036"', claims_change=False)],
        [call("list_folder", folder_id="FLD-036"),
         call("create_folder", user_id="U07", parent_id="FLD-036", name="Archive 2025")]
        + [call("move_item", user_id="U07", item_id=f, destination_folder_id="FLD-066") for f in reports]))

    out.append(scenario(
        "Hand over client projects",
        "I'm Carlos Ruiz (U05) and I'm leaving the studio on Friday. Transfer my 'Client Projects' folder with "
        "everything in it to Dana Whitfield. Before it goes, remove the access Northpeak's Alicia Park has to it; "
        "Nora's access should stay.",
        state,
        [item(1, "Has Dana (U06) become the owner of Client Projects (FLD-032) and everything in it?",
              'ids = ["FLD-032", "FLD-033", "FLD-034", "FIL-0033", "FIL-0034", "FIL-0035", "FIL-0036", "FIL-0037", "FIL-0038"]\n'
              'items = {**final_state["folders"], **final_state["files"]}\n'
              'return all(items[i]["owner_id"] == "U06" for i in ids)'),
         item(2, "Has Alicia Park (U16) lost her access to Client Projects?",
              'return not any(s["item_id"] == "FLD-032" and s["user_id"] == "U16" for s in final_state["shares"].values())'),
         item(3, "Has Nora Quinn (U13) kept editor access?",
              'return any(s["item_id"] == "FLD-032" and s["user_id"] == "U13" and s["role"] == "editor"\n'
              '           for s in final_state["shares"].values())', claims_change=False),
         item(4, "Has Carlos's own expenses file stayed his?",
              'return final_state["files"]["FIL-0039"]["owner_id"] == "U05"', claims_change=False)],
        [call("search_items", name="Client Projects", owner_id="U05", kind="folder"),
         call("list_shares", item_id="FLD-032"),
         call("unshare_item", user_id="U05", item_id="FLD-032", grantee_id="U16"),
         call("search_users", name="Dana Whitfield"),
         call("transfer_ownership", user_id="U05", item_id="FLD-032", new_owner_id="U06")]))

    out.append(scenario(
        "Tidy the team folder",
        "Ben Okoro (U08) here. Please move my timesheet and my travel receipts out of the 'Team Shared' folder into "
        "my own 'Personal' folder, and delete 'meeting-notes-old.txt' from Team Shared while you're at it - it's "
        "outdated.",
        state,
        [item(1, "Has Ben's timesheet (FIL-0049) moved to his Personal folder (FLD-037)?",
              'return final_state["files"]["FIL-0049"]["folder_id"] == "FLD-037"'),
         item(2, "Have Ben's travel receipts (FIL-0050) moved to his Personal folder?",
              'return final_state["files"]["FIL-0050"]["folder_id"] == "FLD-037"'),
         item(3, "Has Maya's meeting-notes-old.txt (FIL-0011) been left untouched (only the owner may delete it)?",
              'f = final_state["files"].get("FIL-0011")\nreturn f is not None and f["trashed"] is False and f["folder_id"] == "FLD-026"',
              claims_change=False)],
        [call("search_items", name="Team Shared", kind="folder"),
         call("list_folder", folder_id="FLD-026"),
         call("search_items", name="Personal", owner_id="U08"),
         call("move_item", user_id="U08", item_id="FIL-0049", destination_folder_id="FLD-037"),
         call("move_item", user_id="U08", item_id="FIL-0050", destination_folder_id="FLD-037"),
         call("check_access", user_id="U08", item_id="FIL-0011")]))

    out.append(scenario(
        "Downgrade to the standard plan",
        "Priya Nair (U09). Please move me from the business plan to the standard plan. If my storage is too big for "
        "it, permanently delete the conference videos sitting in my trash - only those - and then downgrade.",
        state,
        [item(1, "Has Priya been moved to the standard plan?", 'return final_state["users"]["U09"]["plan"] == "standard"'),
         item(2, "Have the two trashed conference videos been permanently deleted?",
              'return "FIL-0063" not in final_state["files"] and "FIL-0064" not in final_state["files"]'),
         item(3, "Has the trashed 'Old drafts' folder been left in the trash?",
              'f = final_state["folders"].get("FLD-039")\n'
              'return f is not None and f["trashed"] is True and "FIL-0065" in final_state["files"]', claims_change=False),
         item(4, "Have all of Priya's event recordings been kept?",
              'return all(f"FIL-{n:04d}" in final_state["files"] for n in range(51, 63))', claims_change=False)],
        [call("get_storage_usage", user_id="U09"),
         call("list_trash", user_id="U09"),
         call("delete_permanently", user_id="U09", item_id="FIL-0063"),
         call("delete_permanently", user_id="U09", item_id="FIL-0064"),
         call("change_plan", user_id="U09", plan="standard")]))

    out.append(scenario(
        "Copy and revise in a shared folder",
        "Dana Whitfield (U06) here. Copy Maya's brand-guidelines-v3.pdf from the Northpeak Rebrand folder into my "
        "Documents folder, and upload my revised workshop-notes.docx (410 KB) as a new version of the file in "
        "Northpeak Rebrand.",
        state,
        [item(1, "Has a copy of the brand guidelines (395 KB PDF) owned by Dana been put in her Documents folder FLD-035?",
              'return any(f["folder_id"] == "FLD-035" and f["owner_id"] == "U06" and f["size_kb"] == 395\n'
              '           and "brand-guidelines" in f["name"] for k, f in final_state["files"].items() if k not in initial_state["files"])'),
         item(2, "Has workshop-notes.docx (FIL-0004) got a second version of 410 KB by Dana?",
              'v = final_state["files"]["FIL-0004"]["versions"]\n'
              'return len(v) == 2 and v[-1]["size_kb"] == 410 and v[-1]["author_id"] == "U06"'),
         item(3, "Has Maya (U01) stayed the owner of workshop-notes.docx?",
              'return final_state["files"]["FIL-0004"]["owner_id"] == "U01"', claims_change=False)],
        [call("search_items", name="brand-guidelines"),
         call("search_items", name="Documents", owner_id="U06", kind="folder"),
         call("copy_file", user_id="U06", file_id="FIL-0001", destination_folder_id="FLD-035"),
         call("search_items", name="workshop-notes"),
         call("upload_new_version", user_id="U06", file_id="FIL-0004", size_kb=410)]))

    out.append(scenario(
        "Make room by upgrading",
        "Sara Lindgren (U03) again. I changed my mind about deleting things: upgrade me to the standard plan instead "
        "and then upload drone-footage.mp4 (350000 KB, video/mp4) to my Videos folder. Keep everything in my trash.",
        state,
        [item(1, "Has Sara been moved to the standard plan?", 'return final_state["users"]["U03"]["plan"] == "standard"'),
         item(2, "Has drone-footage.mp4 (350000 KB) been uploaded to her Videos folder FLD-029?",
              'return any(f["name"] == "drone-footage.mp4" and f["folder_id"] == "FLD-029" and f["size_kb"] == 350000\n'
              '           for f in final_state["files"].values())'),
         item(3, "Have both trashed interview takes been kept in the trash?",
              'return all(k in final_state["files"] and final_state["files"][k]["trashed"] for k in ("FIL-0027", "FIL-0028"))',
              claims_change=False)],
        [call("get_storage_usage", user_id="U03"),
         call("change_plan", user_id="U03", plan="standard"),
         call("upload_file", user_id="U03", folder_id="FLD-029", name="drone-footage.mp4", size_kb=350000,
              mime_type="video/mp4")]))
    return out


# A plausible wrong solution per scenario title: replayed (failed calls ignored), it must leave at least
# one checklist item False, which shows the checklist catches that mistake.
WRONG: dict[str, list[ToolCall]] = {
    "Copy and revise in a shared folder": [
        call("copy_file", user_id="U06", file_id="FIL-0001", destination_folder_id="FLD-035"),
        call("upload_file", user_id="U06", folder_id="FLD-024", name="workshop-notes-v2.docx", size_kb=410,
             mime_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document")],
    "Make room by upgrading": [call("empty_trash", user_id="U03"),
                               call("upload_file", user_id="U03", folder_id="FLD-029", name="drone-footage.mp4",
                                    size_kb=350000, mime_type="video/mp4")],
    "Share the budget read-only": [call("share_item", user_id="U01", item_id="FIL-0009",
                                        grantee_email="dana.whitfield@lumen.example", role="editor")],
    "Restore a deleted press kit": [call("delete_permanently", user_id="U06", item_id="FIL-0041")],
    "Upload that needs space": [call("delete_permanently", user_id="U03", item_id="FIL-0027"),
                                call("trash_item", user_id="U03", item_id="FIL-0020"),
                                call("upload_file", user_id="U03", folder_id="FLD-029", name="drone-footage.mp4",
                                     size_kb=350000, mime_type="video/mp4")],
    "Collaborators on the campaign folder": [
        call("share_item", user_id="U01", item_id="FLD-025", grantee_email="nora.quinn@lumen.example", role="editor"),
        call("share_item", user_id="U01", item_id="FLD-025", grantee_email="alicia.park@northpeak.example", role="viewer")],
    "Bring back a trashed folder": [call("restore_item", user_id="U02", item_id="FLD-027"),
                                    call("restore_item", user_id="U02", item_id="FIL-0013"),
                                    call("rename_item", user_id="U02", item_id="FIL-0015",
                                         new_name="Northpeak SOW-2 (signed).pdf")],
    "Roll back a broken spreadsheet": [
        call("restore_version", user_id="U04", file_id="FIL-0030", version_number=3),
        call("share_item", user_id="U04", item_id="FLD-031", grantee_email="priya.nair@lumen.example", role="editor")],
    "Archive last year's reports": [call("create_folder", user_id="U07", parent_id="FLD-036", name="Archive 2025")]
    + [call("move_item", user_id="U07", item_id=f"FIL-{n:04d}", destination_folder_id="FLD-066") for n in range(43, 48)],
    "Hand over client projects": [call("transfer_ownership", user_id="U05", item_id="FLD-032", new_owner_id="U06"),
                                  call("unshare_item", user_id="U05", item_id="FLD-032", grantee_id="U16")],
    "Tidy the team folder": [call("move_item", user_id="U08", item_id="FIL-0049", destination_folder_id="FLD-037"),
                             call("move_item", user_id="U08", item_id="FIL-0011", destination_folder_id="FLD-037")],
    "Downgrade to the standard plan": [call("empty_trash", user_id="U09"),
                                       call("change_plan", user_id="U09", plan="standard")],
}


# Questions answered by looking things up; checked on what the agent did and said (authoring.read_only).
READ_ONLY: list[dict[str, Any]] = [
    {
        "title": "Why is my storage nearly full?",
        "task": "Hi, this is Sara Lindgren (sara.lindgren@lumen.example). My drive says it is almost full. How "
                "much of my quota am I using (in KB and as a percentage), how much of that is sitting in the "
                "trash, and when will the trashed files be deleted for good?",
        "solution": [("get_user", {"email": "sara.lindgren@lumen.example"}),
                     ("get_storage_usage", {"user_id": "U03"}),
                     ("list_trash", {"user_id": "U03"})],
        "answer": "You use 4,798,512 KB of your 5,000,000 KB quota on the Free plan (96%). 805,000 KB of that "
                  "is in the trash: interview-take1.mp4 will be deleted for good in 18 days and "
                  "interview-take2.mp4 in 21 days. Emptying the trash would free that space now.",
        "checks": [
            ("Has the agent given Sara's use, 4,798,512 KB of a 5,000,000 KB quota?",
             "says(transcript, 4798512, 5000000)"),
            ("Has the agent given the share of the quota used, 96%?", "says(transcript, 96)"),
            ("Has the agent said that 805,000 KB of it is in the trash?", "says(transcript, 805000)"),
            ("Has the agent said interview-take1.mp4 is purged in 18 days?",
             "says(transcript, 'interview-take1.mp4', 18)"),
            ("Has the agent said interview-take2.mp4 is purged in 21 days?",
             "says(transcript, 'interview-take2.mp4', 21)"),
            ("Has the agent looked up Sara's storage use and trash?",
             "called(transcript, 'get_storage_usage', user_id='U03') and called(transcript, 'list_trash', "
             "user_id='U03')"),
        ],
    },
    {
        "title": "Who can open the brand guidelines?",
        "task": "I'm Maya Chen (maya.chen@lumen.example). Apart from me, who can get at the file "
                "brand-guidelines-v3.pdf, and with which role? Is any of that access granted on the file itself?",
        "solution": [("search_items", {"name": "brand-guidelines-v3.pdf", "owner_id": "U01"}),
                     ("list_shares", {"item_id": "FIL-0001"}),
                     ("get_user", {"user_id": "U06"}), ("get_user", {"user_id": "U15"}),
                     ("get_item", {"item_id": "FLD-024"})],
        "answer": "Dana Whitfield can edit it and Jordan Reyes can comment on it. Neither share is on the file "
                  "itself: both are inherited from the Northpeak Rebrand folder that contains it.",
        "checks": [
            ("Has the agent said Dana Whitfield can edit the file?",
             "says(transcript, 'Dana Whitfield') and (says(transcript, 'edit') or says(transcript, 'editor'))"),
            ("Has the agent said Jordan Reyes can comment on it?",
             "says(transcript, 'Jordan Reyes') and (says(transcript, 'comment') or says(transcript, 'commenter'))"),
            ("Has the agent said the access comes from the Northpeak Rebrand folder?",
             "says(transcript, 'Northpeak Rebrand')"),
            ("Has the agent listed the file's shares?", "called(transcript, 'list_shares', item_id='FIL-0001')"),
        ],
    },
]


if __name__ == "__main__":
    state = authoring.default_state(HERE)
    sys.exit(authoring.main(HERE, build(state) + authoring.read_only(ENV_ID, READ_ONLY, state), WRONG))
