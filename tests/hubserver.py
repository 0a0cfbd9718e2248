"""A small Hugging Face Hub on 127.0.0.1 for the tests: the file routes ``huggingface_hub.snapshot_download`` calls
(a repository's revision info with its file list; HEAD and GET of each file under ``resolve/``), serving folders
as repositories, with the faults a real Hub or network shows: a gated repository (401 GatedRepo), a missing one
(404 RepoNotFound), a connection dropped half-way through a file, a file whose size is not what its metadata says.
``huggingface_hub`` reaches it through its endpoint (``HF_ENDPOINT``, or ``constants.ENDPOINT`` in this process).
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubServer:
    """``repos``: repo id -> folder. ``faults``: repo id -> "gated" | "drop" (every file is cut half-way) |
    "short" (every file is 10 bytes shorter than its metadata says). ``requests``: (method, path) in order."""

    def __init__(self, repos: dict[str, Path] | None = None, faults: dict[str, str] | None = None):
        self.repos, self.faults = dict(repos or {}), dict(faults or {})
        self.requests: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                server._answer(self, head=True)

            def do_GET(self):
                server._answer(self, head=False)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def files(self, repo: str) -> list[str]:
        root = self.repos[repo]
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())

    # --- routes ----------------------------------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler, head: bool) -> None:
        path = unquote(urlparse(handler.path).path)
        self.requests.append((handler.command, path))
        if path.startswith("/api/models/") and "/tree/" in path:  # huggingface_hub 1.x and later list the files
            repo, rest = path[len("/api/models/"):].split("/tree/", 1)
            return self._tree(handler, repo, rest.partition("/")[2])
        if path.startswith("/api/models/"):
            repo = path[len("/api/models/"):].split("/revision/")[0]
            return self._info(handler, repo)
        if "/resolve/" in path:
            repo, rest = path.lstrip("/").split("/resolve/", 1)
            return self._file(handler, repo, rest.split("/", 1)[1], head)
        return self._error(handler, 404, "EntryNotFound", "no such route")

    def _known(self, handler, repo: str) -> bool:
        if repo not in self.repos:
            self._error(handler, 404, "RepoNotFound", f"Repository Not Found for url: {handler.path}.")
            return False
        if self.faults.get(repo) == "gated":
            self._error(handler, 401, "GatedRepo", f"Access to model {repo} is restricted.")
            return False
        return True

    def _info(self, handler, repo: str) -> None:
        if not self._known(handler, repo):
            return
        body = json.dumps({"id": repo, "modelId": repo, "sha": COMMIT, "private": False, "gated": False,
                           "siblings": [{"rfilename": f} for f in self.files(repo)]}).encode()
        self._send(handler, 200, body, {"Content-Type": "application/json", "X-Repo-Commit": COMMIT})

    def _tree(self, handler, repo: str, under: str) -> None:
        """The repository's files under a folder (all of them: the client asks recursively), as the Hub lists them."""
        if not self._known(handler, repo):
            return
        entries = []
        for name in self.files(repo):
            if under and not name.startswith(under.rstrip("/") + "/"):
                continue
            data = (self.repos[repo] / name).read_bytes()
            entries.append({"type": "file", "path": name, "size": len(data),
                            "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()})
        self._send(handler, 200, json.dumps(entries).encode(), {"Content-Type": "application/json"})

    def _file(self, handler, repo: str, name: str, head: bool) -> None:
        if not self._known(handler, repo):
            return
        path = self.repos[repo] / name
        if not path.is_file():
            return self._error(handler, 404, "EntryNotFound", f"{name} does not exist")
        data = path.read_bytes()
        etag = hashlib.sha256(data).hexdigest()
        fault = self.faults.get(repo)
        headers = {"ETag": f'"{etag}"', "X-Repo-Commit": COMMIT, "Content-Type": "application/octet-stream",
                   "Accept-Ranges": "none"}
        if head:
            return self._send(handler, 200, b"", {**headers, "Content-Length": str(len(data))}, body_length=0)
        if fault == "drop" and len(data) > 1:  # the headers promise it all; half comes, then the connection closes
            handler.send_response(200)
            for key, value in {**headers, "Content-Length": str(len(data))}.items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        if fault == "short" and len(data) > 10:
            data = data[:-10]
        self._send(handler, 200, data, headers)

    @staticmethod
    def _send(handler, status: int, body: bytes, headers: dict, body_length: int | None = None) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        if "Content-Length" not in headers:
            handler.send_header("Content-Length", str(len(body) if body_length is None else body_length))
        handler.end_headers()
        if body:
            handler.wfile.write(body)

    def _error(self, handler, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self._send(handler, status, body, {"Content-Type": "application/json", "X-Error-Code": code,
                                           "X-Error-Message": message})
