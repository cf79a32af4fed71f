"""Cloud file storage: users with quotas, a folder tree per user, sharing roles, trash with restore, file versions."""

from datetime import date
from typing import Any, Dict, List, Literal, Optional, TypedDict


class PlanInfo(TypedDict):
    plan_id: str
    name: str
    quota_kb: int


class UserInfo(TypedDict):
    user_id: str
    name: str
    email: str
    org: str  # organisation domain, e.g. "lumen.example"
    plan: str
    root_folder_id: str


class FolderInfo(TypedDict):
    folder_id: str
    name: str
    parent_id: Optional[str]  # None for a user's root folder ("My Drive")
    owner_id: str
    created_date: str
    trashed: bool
    trashed_date: Optional[str]
    trashed_via: Optional[str]  # id of the item whose trashing put this one in the trash


class VersionInfo(TypedDict):
    version_number: int
    size_kb: int
    created_date: str
    author_id: str


class FileInfo(TypedDict):
    file_id: str
    name: str
    folder_id: str
    owner_id: str
    mime_type: str
    size_kb: int  # size of the current (last) version
    created_date: str
    modified_date: str
    trashed: bool
    trashed_date: Optional[str]
    trashed_via: Optional[str]
    versions: List[VersionInfo]


class ShareInfo(TypedDict):
    share_id: str
    item_id: str  # a file or folder id; a folder share applies to everything inside it
    user_id: str
    role: str  # viewer | commenter | editor
    granted_by: str
    created_date: str


ROLE_RANK = {"viewer": 1, "commenter": 2, "editor": 3, "owner": 4}
MAX_VERSIONS = 10


class CloudStorage:
    """A shared cloud drive: folders and files per user, role-based sharing, quotas, trash and version history."""

    def __init__(self):
        # Storage plans and their quotas in KB.
        self.plans: Dict[str, PlanInfo] = {}
        # Users keyed by user_id.
        self.users: Dict[str, UserInfo] = {}
        # Folders keyed by folder_id (FLD-nnn).
        self.folders: Dict[str, FolderInfo] = {}
        # Files keyed by file_id (FIL-nnnn), each with its version history.
        self.files: Dict[str, FileInfo] = {}
        # Direct shares keyed by share_id (SH-nnnn).
        self.shares: Dict[str, ShareInfo] = {}
        # Days an item stays in the trash before it is purged.
        self.trash_retention_days: int = 30
        # The current date (YYYY-MM-DD).
        self.today: str = ""

    # ----- helpers -------------------------------------------------------------------------------

    def _next_id(self, records: Dict[str, Any], prefix: str, width: int) -> str:
        numbers = [int(k[len(prefix):]) for k in records if k.startswith(prefix) and k[len(prefix):].isdigit()]
        return f"{prefix}{(max(numbers) + 1 if numbers else 1):0{width}d}"

    def _item(self, item_id: str) -> Optional[Dict[str, Any]]:
        if item_id in self.folders:
            return self.folders[item_id]
        if item_id in self.files:
            return self.files[item_id]
        return None

    def _parent(self, item: Dict[str, Any]) -> Optional[str]:
        return item["parent_id"] if "parent_id" in item else item["folder_id"]

    def _role(self, user_id: str, item_id: str) -> Optional[str]:
        """The user's effective role: owner, or the best share on the item or any folder above it."""
        item = self._item(item_id)
        if item is None:
            return None
        if item["owner_id"] == user_id:
            return "owner"
        best: Optional[str] = None
        current: Optional[str] = item_id
        while current is not None:
            for share in self.shares.values():
                if share["item_id"] == current and share["user_id"] == user_id:
                    if best is None or ROLE_RANK[share["role"]] > ROLE_RANK[best]:
                        best = share["role"]
            node = self._item(current)
            current = self._parent(node) if node else None
        return best

    def _need(self, user_id: str, item_id: str, role: str) -> Optional[str]:
        """None when the user has at least `role` on the item, else the error message."""
        if user_id not in self.users:
            return f"No user with id '{user_id}'."
        item = self._item(item_id)
        if item is None:
            return f"No file or folder with id '{item_id}'."
        have = self._role(user_id, item_id)
        if have is None or ROLE_RANK[have] < ROLE_RANK[role]:
            return f"User {user_id} has {have or 'no'} access to '{item['name']}'; this needs {role} access."
        return None

    def _children(self, folder_id: str, include_trashed: bool = False) -> List[Dict[str, Any]]:
        kids: List[Dict[str, Any]] = [f for f in self.folders.values() if f["parent_id"] == folder_id]
        kids += [f for f in self.files.values() if f["folder_id"] == folder_id]
        return [k for k in kids if include_trashed or not k["trashed"]]

    def _subtree(self, item_id: str) -> List[str]:
        """The item and everything below it (trashed or not)."""
        out = [item_id]
        if item_id in self.folders:
            for kid in self._children(item_id, include_trashed=True):
                out += self._subtree(kid.get("folder_id") if "parent_id" in kid else kid["file_id"])
        return out

    def _name_taken(self, folder_id: str, name: str, ignore: Optional[str] = None) -> bool:
        for kid in self._children(folder_id):
            kid_id = kid["folder_id"] if "parent_id" in kid else kid["file_id"]
            if kid_id != ignore and kid["name"].lower() == name.strip().lower():
                return True
        return False

    def _used_kb(self, user_id: str) -> int:
        return sum(f["size_kb"] for f in self.files.values() if f["owner_id"] == user_id)

    def _quota_kb(self, user_id: str) -> int:
        return self.plans[self.users[user_id]["plan"]]["quota_kb"]

    def _path(self, item_id: str) -> str:
        parts: List[str] = []
        current: Optional[str] = item_id
        while current is not None:
            node = self._item(current)
            if node is None:
                break
            parts.append(node["name"])
            current = self._parent(node)
        return "/" + "/".join(reversed(parts))

    def _view(self, item_id: str) -> Dict[str, Any]:
        node = self._item(item_id) or {}
        view: Dict[str, Any] = {k: v for k, v in node.items() if k != "versions"}
        view["kind"] = "folder" if item_id in self.folders else "file"
        view["path"] = self._path(item_id)
        if view["kind"] == "file":
            view["version_count"] = len(node["versions"])
        return view

    def _days_since(self, day: Optional[str]) -> int:
        return (date.fromisoformat(self.today) - date.fromisoformat(day or self.today)).days

    def _remove(self, item_id: str) -> int:
        """Delete an item and its subtree for good, with their shares; returns the number of items removed."""
        ids = self._subtree(item_id)
        for i in ids:
            self.folders.pop(i, None)
            self.files.pop(i, None)
        for share_id in [s for s, v in self.shares.items() if v["item_id"] in ids]:
            del self.shares[share_id]
        return len(ids)

    # ----- queries -------------------------------------------------------------------------------

    def get_user(self, user_id: Optional[str] = None, email: Optional[str] = None) -> dict:
        """Look up a user by user id or email address.

        Args:
            user_id: The user id, e.g. "U03".
            email: The user's email address (case-insensitive).

        Returns:
            {"success": True, "data": UserInfo} or {"success": False, "error": str}.

        Constraints:
            Give user_id or email.
        """
        if user_id:
            if user_id not in self.users:
                return {"success": False, "error": f"No user with id '{user_id}'."}
            return {"success": True, "data": self.users[user_id]}
        if email:
            for user in self.users.values():
                if user["email"].lower() == email.strip().lower():
                    return {"success": True, "data": user}
            return {"success": False, "error": f"No user with email '{email}'."}
        return {"success": False, "error": "Give a user_id or an email."}

    def search_users(self, name: Optional[str] = None, org: Optional[str] = None) -> dict:
        """Find users whose name contains a text and/or who belong to an organisation.

        Args:
            name: Part of the user's name (case-insensitive).
            org: Organisation domain, e.g. "lumen.example".

        Returns:
            {"success": True, "data": [UserInfo, ...]} sorted by user id.

        Constraints:
            Read-only. Users outside the sharer's org can only be made viewer or commenter.
        """
        found = [u for u in self.users.values()
                 if (not name or name.strip().lower() in u["name"].lower())
                 and (not org or u["org"].lower() == org.strip().lower())]
        return {"success": True, "data": sorted(found, key=lambda u: u["user_id"])}

    def get_storage_usage(self, user_id: str) -> dict:
        """Show a user's storage use against the plan quota; files in the trash still count.

        Args:
            user_id: The user id.

        Returns:
            {"success": True, "data": {"plan", "quota_kb", "used_kb", "trash_kb", "free_kb", "percent_used"}}.

        Constraints:
            Read-only. Files in the trash count until they are permanently deleted.
        """
        if user_id not in self.users:
            return {"success": False, "error": f"No user with id '{user_id}'."}
        used, quota = self._used_kb(user_id), self._quota_kb(user_id)
        trash = sum(f["size_kb"] for f in self.files.values() if f["owner_id"] == user_id and f["trashed"])
        return {"success": True, "data": {"plan": self.users[user_id]["plan"], "quota_kb": quota, "used_kb": used,
                                          "trash_kb": trash, "free_kb": quota - used,
                                          "percent_used": round(100.0 * used / quota, 1) if quota else 100.0}}

    def get_item(self, item_id: str) -> dict:
        """Get a file or folder by id, with its kind and full path.

        Args:
            item_id: A file id (FIL-nnnn) or folder id (FLD-nnn).

        Returns:
            {"success": True, "data": item plus "kind" and "path"} or {"success": False, "error": str}.

        Constraints:
            Read-only. Works for trashed items too (see "trashed").
        """
        if self._item(item_id) is None:
            return {"success": False, "error": f"No file or folder with id '{item_id}'."}
        return {"success": True, "data": self._view(item_id)}

    def list_folder(self, folder_id: str) -> dict:
        """List the folders and files directly inside a folder (not the trashed ones).

        Args:
            folder_id: The folder id; a user's root folder id is in their user record.

        Returns:
            {"success": True, "data": [item view, ...]} folders first, then files, by name.

        Constraints:
            Read-only. The folder must not be in the trash.
        """
        folder = self.folders.get(folder_id)
        if folder is None:
            return {"success": False, "error": f"No folder with id '{folder_id}'."}
        if folder["trashed"]:
            return {"success": False, "error": f"Folder '{folder['name']}' is in the trash; restore it first."}
        kids = self._children(folder_id)
        ids = [k["folder_id"] if "parent_id" in k else k["file_id"] for k in kids]
        views = [self._view(i) for i in ids]
        views.sort(key=lambda v: (v["kind"] != "folder", v["name"].lower()))
        return {"success": True, "data": views}

    def search_items(self, name: Optional[str] = None, owner_id: Optional[str] = None,
                     mime_type: Optional[str] = None, kind: Optional[Literal["file", "folder"]] = None,
                     include_trashed: bool = False) -> dict:
        """Search files and folders by part of the name, owner, MIME type and kind.

        Args:
            name: Text the name must contain (case-insensitive).
            owner_id: Only items owned by this user.
            mime_type: Only files of this MIME type, e.g. "application/pdf".
            kind: "file" or "folder".
            include_trashed: Also return items in the trash.

        Returns:
            {"success": True, "data": [item view, ...]} sorted by path.

        Constraints:
            Read-only. Results are not filtered by access; use check_access for a user's role.
        """
        found = []
        for item_id in list(self.folders) + list(self.files):
            node = self._item(item_id) or {}
            is_folder = item_id in self.folders
            if (kind == "file" and is_folder) or (kind == "folder" and not is_folder):
                continue
            if name and name.strip().lower() not in node["name"].lower():
                continue
            if owner_id and node["owner_id"] != owner_id:
                continue
            if mime_type and (is_folder or node["mime_type"] != mime_type):
                continue
            if node["trashed"] and not include_trashed:
                continue
            found.append(self._view(item_id))
        found.sort(key=lambda v: v["path"].lower())
        return {"success": True, "data": found}

    def check_access(self, user_id: str, item_id: str) -> dict:
        """Tell which role a user effectively has on an item (owner, editor, commenter, viewer or none).

        Args:
            user_id: The user id.
            item_id: A file or folder id.

        Returns:
            {"success": True, "data": {"role": str or None}}; folder shares apply to everything inside.

        Constraints:
            Read-only. None means the user cannot see the item.
        """
        if user_id not in self.users:
            return {"success": False, "error": f"No user with id '{user_id}'."}
        if self._item(item_id) is None:
            return {"success": False, "error": f"No file or folder with id '{item_id}'."}
        return {"success": True, "data": {"role": self._role(user_id, item_id)}}

    def list_shares(self, item_id: str) -> dict:
        """List who has access to an item: direct shares and shares inherited from folders above it.

        Args:
            item_id: A file or folder id.

        Returns:
            {"success": True, "data": [ShareInfo plus "inherited_from" (folder id or None), ...]}.

        Constraints:
            Read-only. Only direct shares can be removed with unshare_item, on the item they are on.
        """
        if self._item(item_id) is None:
            return {"success": False, "error": f"No file or folder with id '{item_id}'."}
        found: List[Dict[str, Any]] = []
        current: Optional[str] = item_id
        while current is not None:
            for share in sorted(self.shares.values(), key=lambda s: s["share_id"]):
                if share["item_id"] == current:
                    row: Dict[str, Any] = dict(share)
                    row["inherited_from"] = None if current == item_id else current
                    found.append(row)
            node = self._item(current)
            current = self._parent(node) if node else None
        return {"success": True, "data": found}

    def list_shared_with_me(self, user_id: str) -> dict:
        """List the items shared directly with a user (not trashed), with the role granted.

        Args:
            user_id: The user id.

        Returns:
            {"success": True, "data": [item view plus "role" and "granted_by", ...]}.

        Constraints:
            Read-only. Items inside a shared folder are reachable through the folder.
        """
        if user_id not in self.users:
            return {"success": False, "error": f"No user with id '{user_id}'."}
        found = []
        for share in sorted(self.shares.values(), key=lambda s: s["share_id"]):
            node = self._item(share["item_id"])
            if share["user_id"] == user_id and node is not None and not node["trashed"]:
                found.append({**self._view(share["item_id"]), "role": share["role"], "granted_by": share["granted_by"]})
        return {"success": True, "data": found}

    def list_trash(self, user_id: str) -> dict:
        """List the items a user owns that were put in the trash, with the days left before purge.

        Args:
            user_id: The user id.

        Returns:
            {"success": True, "data": [item view plus "days_left" and "items_inside", ...]}; only items trashed
            directly (a trashed folder's contents are listed with it, as "items_inside").

        Constraints:
            Read-only. Restore or delete the listed items themselves, not their contents.
        """
        if user_id not in self.users:
            return {"success": False, "error": f"No user with id '{user_id}'."}
        found = []
        for item_id in list(self.folders) + list(self.files):
            node = self._item(item_id) or {}
            if node["owner_id"] == user_id and node["trashed"] and node["trashed_via"] == item_id:
                inside = sum(1 for i in self._subtree(item_id)[1:] if (self._item(i) or {}).get("trashed_via") == item_id)
                days_left = self.trash_retention_days - self._days_since(node["trashed_date"])
                found.append({**self._view(item_id), "days_left": days_left, "items_inside": inside})
        found.sort(key=lambda v: (v["trashed_date"], v["path"]))
        return {"success": True, "data": found}

    def list_versions(self, file_id: str) -> dict:
        """List a file's version history, oldest first; the last one is the current version.

        Args:
            file_id: The file id.

        Returns:
            {"success": True, "data": [VersionInfo, ...]} or {"success": False, "error": str}.

        Constraints:
            Read-only. At most the newest 10 versions are kept.
        """
        if file_id not in self.files:
            return {"success": False, "error": f"No file with id '{file_id}'."}
        return {"success": True, "data": self.files[file_id]["versions"]}

    # ----- changes -------------------------------------------------------------------------------

    def create_folder(self, user_id: str, parent_id: str, name: str) -> dict:
        """Create a folder inside another folder.

        Args:
            user_id: The acting user.
            parent_id: The folder to create it in.
            name: The new folder's name.

        Returns:
            {"success": True, "message": str, "data": {"folder_id": str}} or {"success": False, "error": str}.

        Constraints:
            Needs editor access on the parent, which must not be in the trash; names are unique per folder
            (case-insensitive). The new folder is owned by the acting user.
        """
        if parent_id not in self.folders:
            return {"success": False, "error": f"No folder with id '{parent_id}'."}
        problem = self._need(user_id, parent_id, "editor")
        if problem:
            return {"success": False, "error": problem}
        if self.folders[parent_id]["trashed"]:
            return {"success": False, "error": "The parent folder is in the trash."}
        if not name.strip() or "/" in name:
            return {"success": False, "error": "A folder name must be non-empty and contain no '/'."}
        if self._name_taken(parent_id, name):
            return {"success": False, "error": f"'{name.strip()}' already exists in {self._path(parent_id)}."}
        folder_id = self._next_id(self.folders, "FLD-", 3)
        self.folders[folder_id] = {"folder_id": folder_id, "name": name.strip(), "parent_id": parent_id,
                                   "owner_id": user_id, "created_date": self.today, "trashed": False,
                                   "trashed_date": None, "trashed_via": None}
        return {"success": True, "message": f"Created {self._path(folder_id)}.", "data": {"folder_id": folder_id}}

    def upload_file(self, user_id: str, folder_id: str, name: str, size_kb: int, mime_type: str) -> dict:
        """Upload a new file into a folder; it is owned by, and counts against the quota of, the uploader.

        Args:
            user_id: The acting user.
            folder_id: Destination folder.
            name: File name including extension.
            size_kb: Size in KB (positive).
            mime_type: MIME type, e.g. "application/pdf".

        Returns:
            {"success": True, "message": str, "data": {"file_id": str}} or {"success": False, "error": str}.

        Constraints:
            Needs editor access on the folder; unique name in the folder; used + size_kb must fit the quota.
        """
        if folder_id not in self.folders:
            return {"success": False, "error": f"No folder with id '{folder_id}'."}
        problem = self._need(user_id, folder_id, "editor")
        if problem:
            return {"success": False, "error": problem}
        if self.folders[folder_id]["trashed"]:
            return {"success": False, "error": "The folder is in the trash."}
        if size_kb <= 0:
            return {"success": False, "error": "size_kb must be positive."}
        if not name.strip() or "/" in name:
            return {"success": False, "error": "A file name must be non-empty and contain no '/'."}
        if self._name_taken(folder_id, name):
            return {"success": False, "error": f"'{name.strip()}' already exists in {self._path(folder_id)}."}
        free = self._quota_kb(user_id) - self._used_kb(user_id)
        if size_kb > free:
            return {"success": False, "error": f"Not enough storage: {size_kb} KB needed, {free} KB free "
                                               "(files in the trash count; empty it or change plan)."}
        file_id = self._next_id(self.files, "FIL-", 4)
        self.files[file_id] = {"file_id": file_id, "name": name.strip(), "folder_id": folder_id, "owner_id": user_id,
                               "mime_type": mime_type, "size_kb": size_kb, "created_date": self.today,
                               "modified_date": self.today, "trashed": False, "trashed_date": None,
                               "trashed_via": None, "versions": [{"version_number": 1, "size_kb": size_kb,
                                                                  "created_date": self.today, "author_id": user_id}]}
        return {"success": True, "message": f"Uploaded {self._path(file_id)}.", "data": {"file_id": file_id}}

    def rename_item(self, user_id: str, item_id: str, new_name: str) -> dict:
        """Rename a file or folder.

        Args:
            user_id: The acting user.
            item_id: The file or folder id.
            new_name: The new name.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Needs editor access; root folders cannot be renamed; trashed items cannot be renamed; the name must be
            unique in the folder.
        """
        problem = self._need(user_id, item_id, "editor")
        if problem:
            return {"success": False, "error": problem}
        node = self._item(item_id) or {}
        parent = self._parent(node)
        if parent is None:
            return {"success": False, "error": "A root folder cannot be renamed."}
        if node["trashed"]:
            return {"success": False, "error": f"'{node['name']}' is in the trash; restore it first."}
        if not new_name.strip() or "/" in new_name:
            return {"success": False, "error": "A name must be non-empty and contain no '/'."}
        if self._name_taken(parent, new_name, ignore=item_id):
            return {"success": False, "error": f"'{new_name.strip()}' already exists in {self._path(parent)}."}
        old = node["name"]
        node["name"] = new_name.strip()
        if item_id in self.files:
            node["modified_date"] = self.today
        return {"success": True, "message": f"Renamed '{old}' to '{node['name']}'."}

    def move_item(self, user_id: str, item_id: str, destination_folder_id: str) -> dict:
        """Move a file or folder into another folder.

        Args:
            user_id: The acting user.
            item_id: The file or folder to move.
            destination_folder_id: The folder to move it into.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Needs editor access on the item and the destination; no root folders, no trashed items or
            destinations, no folder into itself or its own subfolder; unique name in the destination.
        """
        problem = self._need(user_id, item_id, "editor") or self._need(user_id, destination_folder_id, "editor")
        if problem:
            return {"success": False, "error": problem}
        if destination_folder_id not in self.folders:
            return {"success": False, "error": f"'{destination_folder_id}' is not a folder."}
        node = self._item(item_id) or {}
        dest = self.folders[destination_folder_id]
        if self._parent(node) is None:
            return {"success": False, "error": "A root folder cannot be moved."}
        if node["trashed"] or dest["trashed"]:
            return {"success": False, "error": "Items in the trash cannot be moved, nor moved into."}
        if destination_folder_id in self._subtree(item_id):
            return {"success": False, "error": "A folder cannot be moved into itself or one of its subfolders."}
        if self._parent(node) == destination_folder_id:
            return {"success": False, "error": f"'{node['name']}' is already in {self._path(destination_folder_id)}."}
        if self._name_taken(destination_folder_id, node["name"]):
            return {"success": False, "error": f"'{node['name']}' already exists in {self._path(destination_folder_id)}."}
        if item_id in self.folders:
            node["parent_id"] = destination_folder_id
        else:
            node["folder_id"] = destination_folder_id
        return {"success": True, "message": f"Moved to {self._path(item_id)}."}

    def copy_file(self, user_id: str, file_id: str, destination_folder_id: str, new_name: Optional[str] = None) -> dict:
        """Copy a file (current version only) into a folder; the copy belongs to the acting user.

        Args:
            user_id: The acting user.
            file_id: The file to copy.
            destination_folder_id: The folder to put the copy in.
            new_name: Name of the copy; default "Copy of <name>".

        Returns:
            {"success": True, "message": str, "data": {"file_id": str}} or {"success": False, "error": str}.

        Constraints:
            Needs viewer access on the file and editor access on the destination; the copy counts against the
            acting user's quota; unique name in the destination.
        """
        if file_id not in self.files:
            return {"success": False, "error": f"No file with id '{file_id}'."}
        src = self.files[file_id]
        if src["trashed"]:
            return {"success": False, "error": f"'{src['name']}' is in the trash."}
        problem = self._need(user_id, file_id, "viewer")
        if problem:
            return {"success": False, "error": problem}
        name = new_name if new_name else f"Copy of {src['name']}"
        result = self.upload_file(user_id, destination_folder_id, name, src["size_kb"], src["mime_type"])
        if result["success"]:
            result["message"] = f"Copied '{src['name']}' to {self._path(result['data']['file_id'])}."
        return result

    def trash_item(self, user_id: str, item_id: str) -> dict:
        """Move a file or folder (with everything inside) to the trash.

        Args:
            user_id: The acting user (must be the owner).
            item_id: The file or folder id.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only the owner can trash an item; root folders cannot be trashed. Trashed files still count against
            the quota until the trash is emptied.
        """
        problem = self._need(user_id, item_id, "owner")
        if problem:
            return {"success": False, "error": problem}
        node = self._item(item_id) or {}
        if self._parent(node) is None:
            return {"success": False, "error": "A root folder cannot be trashed."}
        if node["trashed"]:
            return {"success": False, "error": f"'{node['name']}' is already in the trash."}
        count = 0
        for i in self._subtree(item_id):
            sub = self._item(i) or {}
            if not sub["trashed"]:
                sub["trashed"], sub["trashed_date"], sub["trashed_via"] = True, self.today, item_id
                count += 1
        return {"success": True, "message": f"Moved '{node['name']}' to the trash ({count} item(s))."}

    def restore_item(self, user_id: str, item_id: str) -> dict:
        """Restore an item from the trash to its original folder, with what was trashed together with it.

        Args:
            user_id: The acting user (must be the owner).
            item_id: An item that was put in the trash directly (see list_trash).

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only the owner. Items that were trashed as part of a folder are restored by restoring that folder.
            The original folder must not be in the trash, and no other item there may have the same name.
        """
        problem = self._need(user_id, item_id, "owner")
        if problem:
            return {"success": False, "error": problem}
        node = self._item(item_id) or {}
        if not node["trashed"]:
            return {"success": False, "error": f"'{node['name']}' is not in the trash."}
        if node["trashed_via"] != item_id:
            return {"success": False, "error": f"'{node['name']}' was trashed with folder {node['trashed_via']}; restore that folder."}
        parent = self._parent(node)
        if parent is not None and self.folders[parent]["trashed"]:
            return {"success": False, "error": f"The original folder '{self.folders[parent]['name']}' is in the trash; restore it first."}
        if parent is not None and self._name_taken(parent, node["name"]):
            return {"success": False, "error": f"'{node['name']}' already exists in {self._path(parent)}; rename that item first."}
        count = 0
        for i in self._subtree(item_id):
            sub = self._item(i) or {}
            if sub["trashed"] and sub["trashed_via"] == item_id:
                sub["trashed"], sub["trashed_date"], sub["trashed_via"] = False, None, None
                count += 1
        return {"success": True, "message": f"Restored {self._path(item_id)} ({count} item(s))."}

    def delete_permanently(self, user_id: str, item_id: str) -> dict:
        """Permanently delete an item that is in the trash (frees its storage; cannot be undone).

        Args:
            user_id: The acting user (must be the owner).
            item_id: An item that was put in the trash directly.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only the owner, and only items already in the trash.
        """
        problem = self._need(user_id, item_id, "owner")
        if problem:
            return {"success": False, "error": problem}
        node = self._item(item_id) or {}
        if not node["trashed"]:
            return {"success": False, "error": f"'{node['name']}' is not in the trash; trash it first."}
        if node["trashed_via"] != item_id:
            return {"success": False, "error": f"'{node['name']}' was trashed with folder {node['trashed_via']}; delete that folder."}
        name = node["name"]
        count = self._remove(item_id)
        return {"success": True, "message": f"Permanently deleted '{name}' ({count} item(s))."}

    def empty_trash(self, user_id: str) -> dict:
        """Permanently delete everything in a user's trash.

        Args:
            user_id: The user whose trash is emptied.

        Returns:
            {"success": True, "message": str, "data": {"deleted_items": int, "freed_kb": int}} or an error.

        Constraints:
            Fails when the trash is already empty.
        """
        if user_id not in self.users:
            return {"success": False, "error": f"No user with id '{user_id}'."}
        roots = [i for i in list(self.folders) + list(self.files)
                 if (self._item(i) or {}).get("owner_id") == user_id and (self._item(i) or {}).get("trashed")
                 and (self._item(i) or {}).get("trashed_via") == i]
        if not roots:
            return {"success": False, "error": f"The trash of {user_id} is already empty."}
        before = self._used_kb(user_id)
        count = sum(self._remove(i) for i in roots if self._item(i) is not None)
        freed = before - self._used_kb(user_id)
        return {"success": True, "message": f"Emptied the trash: {count} item(s), {freed} KB freed.",
                "data": {"deleted_items": count, "freed_kb": freed}}

    def purge_expired_trash(self) -> dict:
        """Permanently delete every item that has been in the trash longer than the retention period.

        Returns:
            {"success": True, "message": str, "data": {"purged": [item ids]}}.

        Constraints:
            Deletes for good every item trashed more than trash_retention_days ago; cannot be undone.
        """
        expired = sorted(i for i in list(self.folders) + list(self.files)
                         if (self._item(i) or {}).get("trashed_via") == i
                         and self._days_since((self._item(i) or {}).get("trashed_date")) > self.trash_retention_days)
        for i in expired:
            if self._item(i) is not None:
                self._remove(i)
        return {"success": True, "message": f"Purged {len(expired)} expired item(s).", "data": {"purged": expired}}

    def share_item(self, user_id: str, item_id: str, grantee_email: str,
                   role: Literal["viewer", "commenter", "editor"]) -> dict:
        """Share a file or folder with another user, or change the role of an existing share.

        Args:
            user_id: The acting user (must be the owner).
            item_id: The file or folder id; sharing a folder shares everything inside it.
            grantee_email: Email address of the user to share with.
            role: viewer, commenter or editor.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only the owner shares; not with the owner; not on trashed items. Users outside the owner's
            organisation (different org) can be viewer or commenter only, never editor.
        """
        problem = self._need(user_id, item_id, "owner")
        if problem:
            return {"success": False, "error": problem}
        node = self._item(item_id) or {}
        if node["trashed"]:
            return {"success": False, "error": f"'{node['name']}' is in the trash."}
        if role not in ("viewer", "commenter", "editor"):
            return {"success": False, "error": "role must be viewer, commenter or editor."}
        grantee = next((u for u in self.users.values() if u["email"].lower() == grantee_email.strip().lower()), None)
        if grantee is None:
            return {"success": False, "error": f"No user with email '{grantee_email}'."}
        if grantee["user_id"] == node["owner_id"]:
            return {"success": False, "error": "The owner already has full access."}
        if role == "editor" and grantee["org"] != self.users[node["owner_id"]]["org"]:
            return {"success": False, "error": f"{grantee['email']} is outside the organisation; external users can be viewer or commenter only."}
        for share in self.shares.values():
            if share["item_id"] == item_id and share["user_id"] == grantee["user_id"]:
                if share["role"] == role:
                    return {"success": False, "error": f"{grantee['email']} already has {role} access."}
                share["role"] = role
                return {"success": True, "message": f"{grantee['email']} is now {role} on '{node['name']}'."}
        share_id = self._next_id(self.shares, "SH-", 4)
        self.shares[share_id] = {"share_id": share_id, "item_id": item_id, "user_id": grantee["user_id"], "role": role,
                                 "granted_by": user_id, "created_date": self.today}
        return {"success": True, "message": f"Shared '{node['name']}' with {grantee['email']} as {role}."}

    def unshare_item(self, user_id: str, item_id: str, grantee_id: str) -> dict:
        """Remove a user's direct share on an item.

        Args:
            user_id: The acting user (must be the owner).
            item_id: The file or folder id.
            grantee_id: The user id whose access is removed.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only direct shares on this item can be removed; access inherited from a parent folder is removed
            on that folder.
        """
        problem = self._need(user_id, item_id, "owner")
        if problem:
            return {"success": False, "error": problem}
        for share_id, share in self.shares.items():
            if share["item_id"] == item_id and share["user_id"] == grantee_id:
                del self.shares[share_id]
                return {"success": True, "message": f"Removed {grantee_id}'s access to '{(self._item(item_id) or {})['name']}'."}
        return {"success": False, "error": f"{grantee_id} has no direct share on {item_id} (check list_shares for inherited access)."}

    def upload_new_version(self, user_id: str, file_id: str, size_kb: int) -> dict:
        """Upload a new version of a file; it becomes the current version.

        Args:
            user_id: The acting user.
            file_id: The file id.
            size_kb: Size of the new version in KB.

        Returns:
            {"success": True, "message": str, "data": {"version_number": int}} or {"success": False, "error": str}.

        Constraints:
            Needs editor access; not on trashed files; a size increase must fit the owner's quota. Only the
            newest 10 versions are kept.
        """
        if file_id not in self.files:
            return {"success": False, "error": f"No file with id '{file_id}'."}
        problem = self._need(user_id, file_id, "editor")
        if problem:
            return {"success": False, "error": problem}
        return self._add_version(user_id, file_id, size_kb)

    def _add_version(self, user_id: str, file_id: str, size_kb: int) -> dict:
        f = self.files[file_id]
        if f["trashed"]:
            return {"success": False, "error": f"'{f['name']}' is in the trash."}
        if size_kb <= 0:
            return {"success": False, "error": "size_kb must be positive."}
        growth = size_kb - f["size_kb"]
        free = self._quota_kb(f["owner_id"]) - self._used_kb(f["owner_id"])
        if growth > free:
            return {"success": False, "error": f"Not enough storage for the owner {f['owner_id']}: {growth} KB more needed, {free} KB free."}
        number = f["versions"][-1]["version_number"] + 1
        f["versions"].append({"version_number": number, "size_kb": size_kb, "created_date": self.today, "author_id": user_id})
        f["versions"] = f["versions"][-MAX_VERSIONS:]
        f["size_kb"] = size_kb
        f["modified_date"] = self.today
        return {"success": True, "message": f"'{f['name']}' is now at version {number}.", "data": {"version_number": number}}

    def restore_version(self, user_id: str, file_id: str, version_number: int) -> dict:
        """Make an older version current again by copying it as a new version (history is kept).

        Args:
            user_id: The acting user.
            file_id: The file id.
            version_number: The version to bring back.

        Returns:
            {"success": True, "message": str, "data": {"version_number": int}} or {"success": False, "error": str}.

        Constraints:
            Needs editor access; the version must exist and not already be the current one.
        """
        if file_id not in self.files:
            return {"success": False, "error": f"No file with id '{file_id}'."}
        problem = self._need(user_id, file_id, "editor")
        if problem:
            return {"success": False, "error": problem}
        versions = self.files[file_id]["versions"]
        old = next((v for v in versions if v["version_number"] == version_number), None)
        if old is None:
            return {"success": False, "error": f"Version {version_number} does not exist; kept versions: {[v['version_number'] for v in versions]}."}
        if old is versions[-1]:
            return {"success": False, "error": f"Version {version_number} is already the current version."}
        result = self._add_version(user_id, file_id, old["size_kb"])
        if result["success"]:
            result["message"] = f"Restored version {version_number} as version {result['data']['version_number']}."
        return result

    def transfer_ownership(self, user_id: str, item_id: str, new_owner_id: str) -> dict:
        """Give a file or folder (and everything inside it that the current owner owns) to another user.

        Args:
            user_id: The acting user (must be the current owner).
            item_id: The file or folder id.
            new_owner_id: The user who becomes the owner.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            Only within the same organisation; the new owner's quota must fit the transferred files; not for
            root folders or trashed items. The previous owner keeps editor access to the item.
        """
        problem = self._need(user_id, item_id, "owner")
        if problem:
            return {"success": False, "error": problem}
        new_owner = self.users.get(new_owner_id)
        if new_owner is None:
            return {"success": False, "error": f"No user with id '{new_owner_id}'."}
        node = self._item(item_id) or {}
        if self._parent(node) is None or node["trashed"]:
            return {"success": False, "error": "Root folders and trashed items cannot change owner."}
        if new_owner_id == user_id:
            return {"success": False, "error": f"{user_id} already owns '{node['name']}'."}
        if new_owner["org"] != self.users[user_id]["org"]:
            return {"success": False, "error": "Ownership can only be transferred within the same organisation."}
        ids = [i for i in self._subtree(item_id) if (self._item(i) or {}).get("owner_id") == user_id]
        size = sum(self.files[i]["size_kb"] for i in ids if i in self.files)
        free = self._quota_kb(new_owner_id) - self._used_kb(new_owner_id)
        if size > free:
            return {"success": False, "error": f"{new_owner_id} has {free} KB free but the items take {size} KB."}
        for i in ids:
            (self._item(i) or {})["owner_id"] = new_owner_id
        for share_id in [s for s, v in self.shares.items() if v["item_id"] == item_id and v["user_id"] == new_owner_id]:
            del self.shares[share_id]
        share_id = self._next_id(self.shares, "SH-", 4)
        self.shares[share_id] = {"share_id": share_id, "item_id": item_id, "user_id": user_id, "role": "editor",
                                 "granted_by": new_owner_id, "created_date": self.today}
        return {"success": True, "message": f"{new_owner_id} now owns '{node['name']}' ({len(ids)} item(s)); {user_id} keeps editor access."}

    def change_plan(self, user_id: str, plan: Literal["free", "standard", "business"]) -> dict:
        """Move a user to another storage plan.

        Args:
            user_id: The user id.
            plan: free, standard or business.

        Returns:
            {"success": True, "message": str} or {"success": False, "error": str}.

        Constraints:
            A downgrade is refused while the user's storage (trash included) exceeds the new quota.
        """
        user = self.users.get(user_id)
        if user is None:
            return {"success": False, "error": f"No user with id '{user_id}'."}
        if plan not in self.plans:
            return {"success": False, "error": f"Unknown plan '{plan}'. Plans: {sorted(self.plans)}."}
        if user["plan"] == plan:
            return {"success": False, "error": f"{user_id} is already on the {plan} plan."}
        used, quota = self._used_kb(user_id), self.plans[plan]["quota_kb"]
        if used > quota:
            return {"success": False, "error": f"{user_id} uses {used} KB but the {plan} plan allows {quota} KB; free space first."}
        old = user["plan"]
        user["plan"] = plan
        return {"success": True, "message": f"{user_id} moved from {old} to {plan} ({quota} KB)."}
