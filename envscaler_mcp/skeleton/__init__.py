"""Environment skeletons: the model, static schema extraction, static checks, and building from authoring files."""

from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.checks import check_source, check_state_jsonable
from envscaler_mcp.skeleton.schema import env_structure, extract_state, extract_tools, state_schema

__all__ = [
    "build_skeleton_from_dir",
    "check_source",
    "check_state_jsonable",
    "env_structure",
    "extract_state",
    "extract_tools",
    "state_schema",
]
