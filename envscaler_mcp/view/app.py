"""The viewer's web app (Starlette, server-rendered Jinja2 pages, a little inline script, no build step).

Pages: `/` runs, `/runs/{run}` one run (episodes sortable, filterable and searchable; new episodes appear
while the run is written), `/runs/{run}/episodes/{n}` one episode, `/runs/{run}/failures` the failure
breakdown, `/compare?a=RUN&b=RUN` two runs scenario by scenario. JSON under `/api/...` for each. Run folders
are only read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from envscaler_mcp.harness.rundir import RESULTS_FILE
from envscaler_mcp.view.runs import (
    Run,
    compare_runs,
    episode_row,
    failure_breakdown,
    find_runs,
    load_run,
    read_lines,
    refused,
)
from envscaler_mcp.view.scenario import initial_state_of

TEMPLATES = Path(__file__).parent / "templates"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _try_json(text: str) -> str:
    try:
        return _pretty(json.loads(text))
    except (TypeError, ValueError):
        return text


def _jinja() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=_pct, pretty=_pretty, try_json=_try_json,
                       args=lambda a: json.dumps(a, ensure_ascii=False))
    env.globals.update(refused=refused)
    return env


def run_card(run: Run) -> dict[str, Any]:
    """A runs-list row (also its JSON)."""
    overall = run.summary.overall if run.summary else None
    cost = (overall.agent_usage + overall.user_usage).cost_usd if overall else None
    config = run.manifest.config if run.manifest else None
    k = run.summary.trials if run.summary else 1
    return {"name": run.name, "path": str(run.path), "agent": config.agent if config else "?",
            "created": run.manifest.created_at if run.manifest else "",
            "envs": sorted(run.manifest.scenario_ids) if run.manifest else [],
            "episodes": len(run.episodes), "planned": run.summary.planned if run.summary else None,
            "success": overall.success_rate if overall else None,
            "score": overall.mean_score if overall else None,
            "pass_hat_k": overall.pass_hat_k.get(k) if overall else None, "k": k,
            "infra": overall.infra_errors if overall else 0, "cost": cost, "finished": run.finished,
            "problems": run.problems}


class Viewer:
    """The app over a fixed list of folders; runs are found and read again on every request (runs grow)."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.jinja = _jinja()

    def _runs(self) -> dict[str, Path]:
        return find_runs(self.roots)

    def _run(self, request: Request) -> Run | None:
        name = request.path_params["run"]
        path = self._runs().get(name)
        return load_run(name, path) if path is not None else None

    def _page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.jinja.get_template(template).render(**context), status_code=status)

    def _missing(self, what: str, api: bool) -> Response:
        if api:
            return JSONResponse({"error": what}, status_code=404)
        return self._page("missing.html.j2", status=404, what=what)

    async def runs(self, request: Request) -> Response:
        cards = [run_card(load_run(name, path)) for name, path in self._runs().items()]
        cards.sort(key=lambda c: c["created"], reverse=True)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"runs": cards, "roots": [str(r) for r in self.roots]})
        return self._page("runs.html.j2", cards=cards, roots=self.roots)

    async def run(self, request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        run = self._run(request)
        if run is None:
            return self._missing(f"no run named {request.path_params['run']!r}", api)
        rows = [episode_row(i, r) for i, r in enumerate(run.episodes)]
        if api:
            return JSONResponse({"run": run_card(run), "episodes": rows,
                                 "summary": run.summary.model_dump(mode="json") if run.summary else None})
        return self._page("run.html.j2", run=run, card=run_card(run), rows=rows,
                          envs=sorted({r["env"] for r in rows}), statuses=sorted({r["status"] for r in rows}))

    async def episodes_since(self, request: Request) -> Response:
        """New episodes from line `from` on (the run page polls this while a run is written)."""
        path = self._runs().get(request.path_params["run"])
        if path is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        try:
            start = max(0, int(request.query_params.get("from", "0")))
            first = max(0, int(request.query_params.get("index", "0")))
        except ValueError:
            return JSONResponse({"error": "from and index are line and episode numbers"}, status_code=400)
        lines = read_lines(path / RESULTS_FILE, start)
        rows = [episode_row(first + i, r) for i, r in enumerate(lines.episodes)]
        return JSONResponse({"episodes": rows, "next": lines.next_line, "problems": lines.bad})

    async def episode(self, request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        run = self._run(request)
        if run is None:
            return self._missing(f"no run named {request.path_params['run']!r}", api)
        n = request.path_params["n"]
        if not 0 <= n < len(run.episodes):
            return self._missing(f"run {run.name} has no episode {n}", api)
        result = run.episodes[n]
        if api:
            return JSONResponse(result.model_dump(mode="json"))
        state, why = initial_state_of(run.manifest, result.env_id, result.scenario_id)
        return self._page("episode.html.j2", run=run, n=n, r=result, initial_state=state, state_why=why)

    async def failures(self, request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        run = self._run(request)
        if run is None:
            return self._missing(f"no run named {request.path_params['run']!r}", api)
        breakdown = failure_breakdown(run)
        if api:
            return JSONResponse(breakdown)
        return self._page("failures.html.j2", run=run, b=breakdown)

    async def compare(self, request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        runs = self._runs()
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if a not in runs or b not in runs:
            if api:
                return JSONResponse({"error": "pass two run names: ?a=RUN&b=RUN", "runs": sorted(runs)},
                                    status_code=400)
            return self._page("compare.html.j2", names=sorted(runs), a=a, b=b, rows=None)
        rows = compare_runs(load_run(a, runs[a]), load_run(b, runs[b]))
        if api:
            return JSONResponse({"a": a, "b": b, "rows": rows})
        return self._page("compare.html.j2", names=sorted(runs), a=a, b=b, rows=rows)


def create_app(roots: list[Path]) -> Starlette:
    """The viewer over run folders found in `roots` (a root may be a run folder or a folder of them)."""
    v = Viewer(roots)
    routes = []
    for prefix in ("", "/api"):
        routes += [
            Route(f"{prefix}/" if not prefix else f"{prefix}/runs", v.runs),
            Route(f"{prefix}/runs/{{run}}", v.run),
            Route(f"{prefix}/runs/{{run}}/episodes/{{n:int}}", v.episode),
            Route(f"{prefix}/runs/{{run}}/failures", v.failures),
            Route(f"{prefix}/compare", v.compare),
        ]
    routes.append(Route("/api/runs/{run}/since", v.episodes_since))
    return Starlette(routes=routes)
