"""Launch stage: start generated servers (http, stdio, in memory) and open isolated episodes on them."""

from envscaler_mcp._choices import EpisodeProcess, Transport
from envscaler_mcp.launch.episodes import Episode, NoAdminPlane
from envscaler_mcp.launch.external import launch_external
from envscaler_mcp.launch.launched import LaunchedServer
from envscaler_mcp.launch.servers import launch_server
from envscaler_mcp.launch.target import ServerDir, resolve_target

__all__ = ["Episode", "EpisodeProcess", "LaunchedServer", "NoAdminPlane", "ServerDir", "Transport", "launch_external", "launch_server",
           "resolve_target"]
