"""The oracle's world: a workspace with labelled paths, and the rules a case may draw."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from metis_trace import Route

ROUTES: tuple[Route, ...] = tuple(Route)
WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
PARENT_ROUTES = (Route.INTERACTIVE, Route.PROTOCOL, Route.HEADLESS)


@attrs.frozen
class World:
    """A temporary workspace, a directory outside it and a fake home."""

    workspace: Path
    outside: Path
    home: Path

    def render(self, text: str) -> str:
        return text.replace("{outside}", str(self.outside)).replace("{home}", str(self.home))


def build_world(root: Path) -> World:
    """Create the files and symlinks the labels describe (idempotent)."""
    root = Path(os.path.realpath(root))
    ws, outside, home = root / "ws", root / "outside", root / "home"
    files = {
        ws / "src" / "app.py": "print('app')\n",
        ws / "README.md": "# readme\n",
        ws / "docs" / "guide.md": "# guide\n",
        ws / ".env": "TOKEN=x\n",
        ws / "config" / ".env.local": "TOKEN=y\n",
        ws / ".env.example": "TOKEN=\n",
        ws / ".git" / "config": "[core]\n",
        ws / ".git" / "HEAD": "ref: refs/heads/main\n",
        ws / ".metis" / "settings.json": "{}\n",
        outside / "notes.txt": "outside\n",
        home / ".bashrc": "# rc\n",
        home / ".ssh" / "id_rsa": "KEY\n",
        home / ".ssh" / "id_rsa.pub": "PUB\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for name, target in (("link_env", ".env"), ("link_git", ".git"), ("link_out", "../outside")):
        link = ws / name
        if not link.is_symlink():
            link.symlink_to(target)
    return World(ws, outside, home)


@attrs.frozen
class PathAtom:
    """A path as a call names it, with what is true of its real target.

    `protected` is the path's own nature; the gate reports it only for
    mutating calls. `tags` say which path rules (below) match it.
    """

    text: str
    in_scope: bool = True
    protected: bool = False
    secret: bool = False
    tags: frozenset[str] = frozenset()
    link: bool = False  # named through a symlink: an allow must match both names

    @property
    def allow_tags(self) -> frozenset[str]:
        """The rules an allow matches: the path as named and its target both."""
        return frozenset() if self.link else self.tags


def _p(text: str, *tags: str, **labels: bool) -> PathAtom:
    return PathAtom(text, tags=frozenset(tags), **labels)


PATHS: tuple[PathAtom, ...] = (
    _p("src/app.py", "src"),
    _p("./src/new.py", "src"),
    _p("src/../README.md", "md"),
    _p("README.md", "md"),
    _p("docs/guide.md", "docs", "md"),
    _p(".env", "env", secret=True),
    _p("link_env", "env", secret=True, link=True),  # a symlink to .env
    _p("config/.env.local", secret=True),
    _p(".env.example"),
    _p(".git/config", "git", protected=True),
    _p("src/../.git/HEAD", "git", protected=True),
    _p("link_git/config", "git", protected=True, link=True),  # through a symlink to .git
    _p(".metis/settings.json", protected=True),
    _p("../outside/notes.txt", "outside", in_scope=False),
    _p("link_out/notes.txt", "outside", in_scope=False, link=True),  # a symlink leaving
    _p("{outside}/notes.txt", "outside", in_scope=False),
    _p("{home}/.bashrc", "home", in_scope=False, protected=True),
    _p("{home}/.ssh/id_rsa", "home", "ssh", in_scope=False, protected=True, secret=True),
    _p("{home}/.ssh/id_rsa.pub", "home", "ssh", in_scope=False, protected=True),
)


DYN = "\x00dynamic"  # a word only known at run time


@attrs.frozen
class BashPattern:
    """Our own reading of a Bash rule (independent of the runtime's parser)."""

    form: str  # any | prefix | exact | wildcard
    tokens: tuple[str, ...] = ()
    regex: str = ""


@attrs.frozen
class RuleTemplate:
    """A rule text and what it matches: `group` is the tool family it speaks
    for; a path rule matches the atoms carrying `tag` (None: every path)."""

    text: str
    group: str  # read | edit | write | bash | web
    tag: str | None = None
    bash: BashPattern | None = None


def _bash(spec: str, form: str, *tokens: str, regex: str = "") -> RuleTemplate:
    return RuleTemplate(f"Bash({spec})", "bash", bash=BashPattern(form, tokens, regex))


RULES: tuple[RuleTemplate, ...] = (
    RuleTemplate("Read(./.env)", "read", "env"),
    RuleTemplate("Read(.env)", "read", "env"),
    RuleTemplate("Read(src/**)", "read", "src"),
    RuleTemplate("Read(*.md)", "read", "md"),
    RuleTemplate("Read(/{outside}/**)", "read", "outside"),  # renders as //abs
    RuleTemplate("Read(/{home}/.ssh/**)", "read", "ssh"),
    RuleTemplate("Read", "read"),
    RuleTemplate("Edit(src/**)", "edit", "src"),
    RuleTemplate("Edit(/docs/**)", "edit", "docs"),
    RuleTemplate("Write(*.md)", "write", "md"),
    RuleTemplate("Edit(.git/**)", "edit", "git"),
    RuleTemplate("Edit(/{home}/**)", "edit", "home"),
    RuleTemplate("Edit", "edit"),
    RuleTemplate("WebFetch(domain:example.com)", "web", "never"),
    _bash("git status:*", "prefix", "git", "status"),
    _bash("git:*", "prefix", "git"),
    _bash("rm:*", "prefix", "rm"),
    _bash("npm run test", "exact", "npm", "run", "test"),
    _bash("npm run *", "wildcard", regex=r"npm run(?: .*)?"),
    _bash("curl:*", "prefix", "curl"),
    _bash("cat:*", "prefix", "cat"),
    _bash("echo:*", "prefix", "echo"),
    _bash("python3:*", "prefix", "python3"),
    _bash("sudo:*", "prefix", "sudo"),
    _bash("ls:*", "prefix", "ls"),
    _bash("touch:*", "prefix", "touch"),
    RuleTemplate("Bash", "bash", bash=BashPattern("any")),
)

GROUP_OF_TOOL = {
    "read": "read",
    "ls": "read",
    "grep": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "bash",
}
