"""fulcrumctl: the appliance's API from a shell, for operators who script their load balancers.

    fulcrumctl login https://lb1.example:443 admin      # asks for the password, keeps a token
    fulcrumctl status
    fulcrumctl services
    fulcrumctl drain web 198.51.100.1                    # weight 0: existing connections finish
    fulcrumctl changes                                   # what a commit would do
    fulcrumctl commit -m "drain b1" --confirm-within 120
    fulcrumctl import keepalived.conf conf.d/*.conf      # preview: the report and the plan
    fulcrumctl import rules.txt --apply --replace        # into the candidate; then changes, commit
    fulcrumctl api GET /revisions                        # any endpoint, raw JSON

FULCRUM_URL and FULCRUM_TOKEN override the saved login (e.g. an API token in CI).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

CONFIG = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "fulcrum" / "cli.json"


class CliError(Exception):
    pass


class Api:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        response = self.client.request(method, "/api/v1" + path, json=body, params=params)
        if response.status_code >= 400:
            raise CliError(_explain(response))
        return response.json() if response.content else None


def _explain(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    if isinstance(detail, list):
        return "\n".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'request'}: {e['msg']}" for e in detail)
    return f"HTTP {response.status_code}: {detail}"


def _saved() -> dict[str, str]:
    saved = json.loads(CONFIG.read_text()) if CONFIG.exists() else {}
    url = os.environ.get("FULCRUM_URL", saved.get("url"))
    token = os.environ.get("FULCRUM_TOKEN", saved.get("token"))
    if not url or not token:
        raise CliError("not logged in: run `fulcrumctl login URL USER` or set FULCRUM_URL and FULCRUM_TOKEN")
    return {"url": url, "token": token}


def _find_service(api: Api, name: str) -> dict[str, Any]:
    for service in api.call("GET", "/services")["data"]:
        if service["name"] == name:
            return service
    raise CliError(f"no service named {name!r}")


def _find_backend(service: dict[str, Any], address: str) -> dict[str, Any]:
    host, _, port = address.rpartition(":") if address.count(":") == 1 else (address, "", "")
    for backend in service["backends"]:
        if backend["address"] == host and (not port or str(backend["port"] or service["ports"][0]) == port):
            return backend
    raise CliError(f"service {service['name']} has no backend {address}")


def _set_backend(api: Api, args: argparse.Namespace, change: dict[str, Any]) -> Any:
    service = _find_service(api, args.service)
    backend = _find_backend(service, args.backend)
    return api.call("PATCH", f"/services/{service['id']}/backends/{backend['id']}", change)


def _services_table(api: Api) -> str:
    rows = []
    for s in api.call("GET", "/services")["data"]:
        live = sum(1 for b in s["backends"] if b["enabled"] and b["weight"] > 0)
        ports = ",".join(str(p) for p in s["ports"])
        rows.append(
            f"{s['name']:<20} {s['address']}:{ports}/{s['protocol']:<5} {s['scheduler']:<5} "
            f"{s['forwarding']:<4} {live}/{len(s['backends'])} "
            f"backends{'' if s['enabled'] else '  (disabled)'}"
        )
    return "\n".join(rows) or "no services"


def _import(api: Api, args: argparse.Namespace) -> str:
    def read(path: str) -> str:
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read {path}: {exc}") from exc

    body = {
        "format": args.format,
        "text": read(args.file),
        "includes": {Path(p).name: read(p) for p in args.includes},
        "mode": "apply" if args.apply else "preview",
        "on_conflict": "replace" if args.replace else "skip",
    }
    result = api.call("POST", "/imports", body)
    lines = [f"{r['file']}:{r['line']}: {r['outcome']}: {r['detail']}" for r in result["report"]]
    lines += [""] + [
        f"{o['action']:<11} {o['kind']:<9} {o['name']}: {o['summary']}"
        + (f" (conflicts with {', '.join(o['conflicts_with'])})" if o["conflicts_with"] else "")
        for o in result["objects"]
    ]
    lines += [
        f"{'!' if i['disruptive'] else ' '} {i['action']:<6} {i['kind']:<8} {i['target']}: {i['detail']}"
        for i in result["changes"]["items"]
    ]
    lines.append(
        "imported into the candidate: see `fulcrumctl changes`, then commit"
        if result["applied"]
        else "preview only: nothing changed (use --apply)"
    )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fulcrumctl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    login = sub.add_parser("login", help="log in and keep a session token")
    login.add_argument("url")
    login.add_argument("username")
    login.add_argument(
        "--insecure", action="store_true", help="accept the appliance's self-signed certificate"
    )
    sub.add_parser("status", help="data plane and revisions")
    sub.add_parser("services", help="list services")
    for name, help_text in (
        ("drain", "weight 0: existing connections finish, no new ones"),
        ("disable", "take out of IPVS for maintenance"),
        ("enable", "put back in service"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("service")
        p.add_argument("backend", help="ADDRESS or ADDRESS:PORT")
    weight = sub.add_parser("weight", help="set a backend's weight")
    weight.add_argument("service")
    weight.add_argument("backend")
    weight.add_argument("weight", type=int)
    sub.add_parser("changes", help="what committing the candidate would do")
    commit = sub.add_parser("commit", help="apply the candidate as a new revision")
    commit.add_argument("-m", "--message", default="")
    commit.add_argument("--confirm-within", type=int, help="seconds; rolls back unless confirmed")
    for name in ("confirm", "rollback"):
        p = sub.add_parser(name, help=f"{name} revision N")
        p.add_argument("number", type=int)
    sub.add_parser("revisions", help="list revisions")
    imported = sub.add_parser(
        "import", help="import keepalived.conf or ipvsadm rules (preview unless --apply)"
    )
    imported.add_argument(
        "file", help="keepalived.conf, or ipvsadm rules (ipvsadm -S -n output or ipvsadm -R input)"
    )
    imported.add_argument("includes", nargs="*", help="files that the configuration includes")
    imported.add_argument("--format", choices=("auto", "keepalived", "ipvsadm"), default="auto")
    imported.add_argument("--apply", action="store_true", help="write into the candidate configuration")
    imported.add_argument(
        "--replace", action="store_true", help="imported services replace existing ones on the same VIP:port"
    )
    raw = sub.add_parser("api", help="call any endpoint")
    raw.add_argument("method")
    raw.add_argument("path", help="e.g. /services")
    raw.add_argument("body", nargs="?", help="JSON body")
    return parser


def run(args: argparse.Namespace, api: Api) -> Any:
    match args.command:
        case "status":
            return api.call("GET", "/status")
        case "services":
            return _services_table(api)
        case "drain":
            return _set_backend(api, args, {"weight": 0})
        case "disable":
            return _set_backend(api, args, {"enabled": False})
        case "enable":
            return _set_backend(api, args, {"enabled": True})
        case "weight":
            return _set_backend(api, args, {"weight": args.weight})
        case "changes":
            changes = api.call("GET", "/changes")
            if not changes["has_changes"]:
                return "no uncommitted changes"
            lines = [
                f"{'!' if i['disruptive'] else ' '} {i['action']:<6} {i['kind']:<8} {i['target']}: "
                f"{i['detail']}"
                for i in changes["plan"]["items"]
            ]
            return "\n".join(lines + [f"  warning: {w}" for w in changes["plan"]["warnings"]])
        case "commit":
            return api.call(
                "POST", "/revisions", {"message": args.message, "confirm_within": args.confirm_within}
            )
        case "confirm":
            return api.call("POST", f"/revisions/{args.number}/confirm")
        case "rollback":
            return api.call("POST", f"/revisions/{args.number}/rollback", {})
        case "revisions":
            return "\n".join(
                f"{r['number']:>5} {r['state']:<17} {r['created_at'][:19]} {r['author']:<12} {r['message']}"
                for r in api.call("GET", "/revisions")["data"]
            )
        case "import":
            return _import(api, args)
        case "api":
            return api.call(args.method.upper(), args.path, json.loads(args.body) if args.body else None)
    raise CliError(f"unknown command {args.command}")


def _login(args: argparse.Namespace) -> str:
    password = os.environ.get("FULCRUM_PASSWORD") or getpass.getpass(f"password for {args.username}: ")
    with httpx.Client(base_url=args.url, verify=not args.insecure, timeout=30) as client:
        token = Api(client).call("POST", "/auth/login", {"username": args.username, "password": password})[
            "token"
        ]
    CONFIG.parent.mkdir(parents=True, exist_ok=True)
    CONFIG.touch(mode=0o600)
    CONFIG.write_text(json.dumps({"url": args.url, "token": token}))
    return f"logged in to {args.url} as {args.username}"


def main(argv: list[str] | None = None, client: httpx.Client | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "login":
            result: Any = _login(args)
        elif client is not None:
            result = run(args, Api(client))
        else:
            saved = _saved()
            headers = {"Authorization": f"Bearer {saved['token']}"}
            verify = os.environ.get("FULCRUM_INSECURE") != "1"
            with httpx.Client(base_url=saved["url"], headers=headers, verify=verify, timeout=120) as http:
                result = run(args, Api(http))
    except (CliError, httpx.HTTPError) as exc:
        print(f"fulcrumctl: {exc}", file=sys.stderr)
        return 1
    if result is not None:
        print(result if isinstance(result, str) else json.dumps(result, indent=2))
    return 0
