"""What capture records about files, checked against the real `git` binary on scratch repositories: blob ids,
HEAD (loose, packed, detached, worktrees, sha256 repositories), remotes without credentials, the files a
Claude Code turn touched or named, and how mentions are told from prose."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gieok.capture.transcript import Line, code_meta, stream_items
from gieok.core.anchors import FileRef, from_meta, gather, mentions, parse_ref
from gieok.core.gitfiles import RepoCache, clean_remote, repo_name


def git(repo: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=T",
                        "-c", "init.defaultBranch=main", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def make_repo(path: Path, *, object_format: str | None = None) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", *([f"--object-format={object_format}"] if object_format else []))
    git(path, "remote", "add", "origin", "https://dev:ghp_s3cr3tT0ken@github.com/acme/shop.git")
    (path / "billing").mkdir()
    (path / "billing" / "retry.py").write_text("".join(f"line {i}\n" for i in range(1, 31)), "utf-8")
    (path / "README.md").write_text("# shop\n", "utf-8")
    git(path, "add", ".")
    git(path, "commit", "-qm", "init")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "shop")


def test_blob_and_head_are_what_git_says(repo: Path) -> None:
    (repo / "billing" / "retry.py").write_text("changed, not committed\n", "utf-8")
    [a] = gather([FileRef(str(repo / "billing" / "retry.py"), "edit")], str(repo))
    assert a["root"] == str(repo) and a["path"] == "billing/retry.py" and a["via"] == "edit"
    assert a["commit"] == git(repo, "rev-parse", "HEAD")
    assert a["blob"] == git(repo, "hash-object", "billing/retry.py")
    assert a["remote"] == "https://github.com/acme/shop.git"          # the token is not kept
    git(repo, "pack-refs", "--all")                                    # refs only in packed-refs now
    assert (repo / ".git" / "refs" / "heads" / "main").exists() is False
    assert gather([FileRef("README.md", "read")], str(repo))[0]["commit"] == git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    assert gather([FileRef("README.md", "read")], str(repo))[0]["commit"] == git(repo, "rev-parse", "HEAD")


def test_worktree_and_subdirectory(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "shop-feature"))
    wt = tmp_path / "shop-feature"
    (wt / "billing" / "retry.py").write_text("feature work\n", "utf-8")
    git(wt, "commit", "-qam", "feature")
    # cwd deep inside the worktree; the mention is relative to the repository root
    [a] = gather(mentions("see billing/retry.py:3"), str(wt / "billing"))
    assert a["root"] == str(wt) and a["path"] == "billing/retry.py" and a["lines"] == [3, 3]
    assert a["commit"] == git(wt, "rev-parse", "HEAD") != git(repo, "rev-parse", "HEAD")
    assert a["blob"] == git(wt, "hash-object", "billing/retry.py")
    assert a["remote"] == "https://github.com/acme/shop.git"          # from the common config


def test_sha256_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop256", object_format="sha256")
    [a] = gather([FileRef("billing/retry.py", "read")], str(repo))
    assert len(a["blob"]) == 64 and a["blob"] == git(repo, "hash-object", "billing/retry.py")
    assert a["commit"] == git(repo, "rev-parse", "HEAD")


def test_outside_git_and_missing_files(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("메모\n", "utf-8")
    [a] = gather([FileRef(str(notes), "write")], str(tmp_path))
    assert a["root"] == "" and a["path"] == str(notes) and a["blob"].startswith("sha256:")
    assert gather(mentions("notes.md and gone.py"), str(tmp_path)) == [
        {**a, "via": "mention"}]                      # a mention of a file that does not exist is prose
    [gone] = gather([FileRef("deleted.py", "write")], str(tmp_path))   # a tool's file is kept
    assert gone["path"].endswith("deleted.py") and "blob" not in gone


def test_mentions_are_told_from_prose(repo: Path) -> None:
    text = ("Fixed in `billing/retry.py:12-18` (see also ./README.md#L1 and billing/retry.py::backoff). "
            "e.g. v3.11.7 is fine; https://github.com/acme/shop/blob/main/README.md is the docs; "
            "tests/test_missing.py does not exist.")
    refs = mentions(text)
    assert [(r.path, r.line_start, r.line_end, r.symbol) for r in refs][:3] == [
        ("billing/retry.py", 12, 18, ""), ("./README.md", 1, 1, ""), ("billing/retry.py", None, None, "backoff")]
    assert not any("github.com" in r.path for r in refs)
    got = {a["path"]: a for a in gather(refs, str(repo))}
    assert set(got) == {"billing/retry.py", "README.md"}
    assert got["billing/retry.py"]["lines"] == [12, 18] and got["billing/retry.py"]["symbol"] == "backoff"
    assert (parse_ref("src/app.ts#L10-L20").line_start, parse_ref("src/app.ts#L10-L20").line_end) == (10, 20)


def _entry(kind: str, uuid: str, content: object, cwd: str) -> Line:
    return Line(0, 0, {"type": kind, "uuid": uuid, "sessionId": "s", "cwd": cwd, "timestamp": "2026-11-30T09:00:00Z",
                       "message": {"role": kind, "content": content, "model": "m"}})


def test_a_turns_tool_calls_become_anchors_with_lines(repo: Path) -> None:
    target = repo / "billing" / "retry.py"
    body = target.read_text("utf-8").replace("line 12\nline 13\n", "line 12\nseeded = clock(0)\n")
    target.write_text(body, "utf-8")                              # the state after the agent's edit
    cwd = str(repo)
    lines = [
        _entry("user", "u1", "the flaky test again", cwd),
        _entry("assistant", "a1", [{"type": "tool_use", "id": "t1", "name": "Read",
                                    "input": {"file_path": str(target), "offset": 5, "limit": 10}}], cwd),
        _entry("user", "r1", [{"type": "tool_result", "tool_use_id": "t1", "content": "…file…"}], cwd),
        _entry("assistant", "a2", [{"type": "tool_use", "id": "t2", "name": "Edit",
                                    "input": {"file_path": str(target), "old_string": "line 13\n",
                                              "new_string": "seeded = clock(0)\n"}}], cwd),
        _entry("user", "r2", [{"type": "tool_result", "tool_use_id": "t2", "is_error": False,
                               "content": "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                                          "ValueError: clock drift 12ms"}], cwd),
        _entry("assistant", "a3", [{"type": "text", "text": "Seeded the clock in billing/retry.py; see README.md."}],
               cwd),
    ]
    items = stream_items(lines)
    turn = items[-1]
    assert turn.role == "assistant" and [f.via for f in turn.files] == ["read", "edit"]
    meta = code_meta(turn, cwd, snapshot=True)
    by_path = {a["path"]: a for a in meta["anchors"]}
    assert set(by_path) == {"billing/retry.py", "README.md"}
    a = by_path["billing/retry.py"]
    assert a["via"] == "edit" and a["lines"] == [5, 14]           # the read's range and the edit's line (13)
    assert a["blob"] == git(repo, "hash-object", "billing/retry.py")
    assert meta["tool_errors"] and "ValueError: clock drift" in meta["tool_errors"][0]
    # importing an old transcript: where, not which version
    old = code_meta(turn, cwd, snapshot=False)
    assert all("blob" not in x and "commit" not in x for x in old["anchors"])
    assert {x.path for x in from_meta(old)} == {"billing/retry.py", "README.md"}


def test_meta_from_clients_is_validated() -> None:
    meta = {"anchors": [{"path": "a.py", "lines": [9, 3], "remote": "https://u:p@h/x.git", "via": "weird"},
                        {"path": ""}, "nonsense", {"path": "b\x00.py"}, {"path": "a.py"},
                        {"path": "c.py", "lines": ["1"], "commit": 5}]}
    got = from_meta(meta)
    assert [(a.path, a.line_start, a.line_end, a.remote, a.via, a.commit) for a in got] == [
        ("a.py", 3, 9, "https://h/x.git", "mention", ""), ("c.py", None, None, "", "mention", "")]
    assert from_meta({"anchors": "x"}) == [] and from_meta({}) == []


def test_remote_names() -> None:
    assert clean_remote("https://x-access-token:abc@github.com/a/b.git") == "https://github.com/a/b.git"
    assert clean_remote("git@github.com:a/b.git") == "git@github.com:a/b.git"
    assert repo_name("git@github.com:acme/billing.git", "/x/y") == "billing"
    assert repo_name("", "/home/me/shop/") == "shop"
    assert RepoCache().for_path("/proc") is None                    # walks up to / and stops


def test_gather_is_bounded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gieok.core.anchors as anchors
    for i in range(40):
        (repo / "billing" / f"m{i}.py").write_text(json.dumps(list(range(2000))), "utf-8")
    refs = [FileRef(f"billing/m{i}.py", "read") for i in range(40)]
    assert len(gather(refs, str(repo))) == anchors.MAX_ANCHORS       # per message
    monkeypatch.setattr(anchors, "MAX_HASH_BYTES", 100)             # too big to hash in a hook: no blob,
    [big] = gather(refs[:1], str(repo))                             # the librarian fills it in
    assert "blob" not in big and big["commit"] == git(repo, "rev-parse", "HEAD")
