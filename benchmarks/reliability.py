"""Reliability: kill -9 at random moments, a disk that fills up, and hostile input.

Three sweeps, each against the real CLI and the configured graph engine:

* **kill sweep** — SIGKILL ``kgagent play``, ``memory export``, ``memory import
  --force`` (and ``memory merge`` where that command exists) at random moments.
  After each kill: the memory opens (the next writer finishes an interrupted swap),
  ``memory check`` finds no problem, every step the step log shows as committed is in
  the graph, an archive that exists is complete, and leftovers are removed.
* **disk-full sweep** — ``kgagent play`` on a small tmpfs whose free space is just
  above the reserve: it must stop with one line (exit 1) before the disk fills,
  never hang, and lose nothing committed. Needs root (mount); skipped otherwise.
* **fuzz** — generated archives (byte flips, truncations, bad JSON values, bad
  column values, hostile member names, size bombs), config files and Cypher
  queries (comment/string/backtick tricks around file statements), each through
  the CLI in process. Counted: refused in one line, accepted, tracebacks, files
  written outside the sandbox's allowed places, hangs.

Targets: 0 lost, 0 tracebacks, 0 written outside, 0 hangs.

    python benchmarks/reliability.py                      # ~10 minutes, the configured engine
    python benchmarks/reliability.py --engine kuzu --kills 54 --disk-runs 4 --fuzz 600
    python benchmarks/reliability.py --kills 6 --disk-runs 1 --fuzz 60     # a quick look

See docs/reliability.md for a run's figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PLAY_TIMEOUT_S = 600


def kgagent(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgagent.cli.main", *args]


def run(cmd: list[str], timeout: float = PLAY_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def header(argv: list[str]) -> None:
    names = ("ladybug", "kuzu", "lancedb", "pyarrow", "numpy", "click")
    vers = [f"python {platform.python_version()}"]
    for n in names:
        try:
            vers.append(f"{n} {importlib.metadata.version(n)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"command: python benchmarks/reliability.py {' '.join(argv)}")
    print(f"date:    {dt.datetime.now().strftime('%Y-%m-%d %H:%M')}")
    print(
        f"machine: {cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}"
    )
    print(f"engine:  {os.environ.get('KGAGENT_ENGINE', 'ladybug')}; versions: {', '.join(vers)}")


# ------------------------------------------------------------------ checking a memory
def committed_steps(log_dir: Path) -> tuple[set[str], set[str]]:
    """State and skill ids of every step a step log records (a torn last line skipped)."""
    states: set[str] = set()
    skills: set[str] = set()
    for log in sorted(log_dir.glob("*.jsonl")):
        for line in log.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                break
            if rec.get("type") != "step":
                continue
            if rec.get("state_id"):
                states.add(rec["state_id"])
            if rec.get("skill_id"):
                skills.add(rec["skill_id"])
            for ex in rec.get("executions") or []:
                states.update(s for s in (ex.get("from_state"), ex.get("to_state")) if s)
    return states, skills


def verify(path: Path, states: set[str] = frozenset(), skills: set[str] = frozenset()) -> dict:
    """Open (repairing what a writer would), check, and count what the log says is lost."""
    from kgagent.config import Config
    from kgagent.errors import KGAgentError
    from kgagent.memory import Memory
    from kgagent.memory.repair import repair

    out = {"opens": True, "problems": [], "lost": 0, "repaired": []}
    try:
        repair(path, Config(), out["repaired"].append)
        with Memory.open(path, Config(), read_only=True) as m:
            out["problems"] = [r["check"] for r in m.check() if r["status"] == "problem"]
            have_s = {r["id"] for r in m.cypher("MATCH (s:State) RETURN s.id AS id")}
            have_k = {r["id"] for r in m.cypher("MATCH (k:Skill) RETURN k.id AS id")}
            out["nodes"] = len(have_s)
            out["memory_id"] = m.manifest.get("memory_id")
        out["lost"] = len(set(states) - have_s) + len(set(skills) - have_k)
    except KGAgentError as e:
        out["opens"] = False
        out["problems"] = [str(e)]
    return out


# ------------------------------------------------------------------ kill sweep
def kill_at(cmd: list[str], delay: float) -> int:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return proc.returncode


def timed(cmd: list[str]) -> float:
    t = time.monotonic()
    res = run(cmd)
    if res.returncode != 0:
        raise SystemExit(f"setup command failed: {' '.join(cmd)}\n{res.stderr}")
    return time.monotonic() - t


#: `kgagent` with the import's swap forced to two renames (where renameat2 is not used).
TWO_RENAMES = (
    "import sys; from kgagent.memory import archive_import; "
    "archive_import.SWAP_BY_EXCHANGE = False; from kgagent.cli.main import main; "
    "sys.argv = ['kgagent', *sys.argv[1:]]; main()"
)


def merge_available() -> bool:
    return run(kgagent("memory", "merge", "--help"), timeout=120).returncode == 0


def kill_sweep(n: int, rng: random.Random, box: Path, base: Path, tally: Counter) -> None:
    from kgagent.memory.archive import inspect_archive

    ops = ["play", "export", "import"] + (["merge"] if merge_available() else [])
    if "merge" not in ops:
        print("kill sweep: `kgagent memory merge` does not exist here; merge is left out")
    archive = box / "base.kgmem.tar.gz"
    t_export = timed(kgagent("memory", "export", str(archive), "--memory", str(base), "--force"))
    target = box / "kill-import"
    t_import = timed(kgagent("memory", "import", str(archive), "--memory", str(target)))
    base_nodes = verify(base)["nodes"]
    play_mem, logs = box / "kill-play", box / "kill-logs"
    out = box / "kill-export" / "out.kgmem.tar.gz"
    out.parent.mkdir()
    dest = box / "kill-merge"
    if "merge" in ops:
        timed(kgagent("memory", "import", str(archive), "--memory", str(dest)))
    for i in range(n):
        op = ops[i % len(ops)]
        tally[f"kills {op}"] += 1
        if op == "play":
            delay = rng.uniform(2.0, 12.0)
            kill_at(
                kgagent("play", "--env", "civgame", "--steps", "100000", "--seed", str(i))
                + ["--memory", str(play_mem), "--log-dir", str(logs), "--quiet"],
                delay,
            )
            states, skills = committed_steps(logs)
            v = (
                verify(play_mem, states, skills)
                if play_mem.exists()
                else {"opens": True, "problems": [], "lost": len(states)}
            )
        elif op == "export":
            kill_at(
                kgagent("memory", "export", str(out), "--memory", str(base), "--force"),
                rng.uniform(0.2, 1.3 * t_export),
            )
            v = verify(base)
            if out.exists():
                try:
                    inspect_archive(out)
                except Exception as e:  # noqa: BLE001 - any failure counts
                    v["problems"].append(f"archive left damaged: {e}")
        elif op == "import":
            cmd = kgagent("memory", "import", str(archive), "--memory", str(target), "--force")
            if (i // len(ops)) % 2:  # every other import: the two-rename swap with its journal
                cmd = [sys.executable, "-c", TWO_RENAMES, *cmd[3:]]
            kill_at(cmd, rng.uniform(0.2, 1.3 * t_import))
            v = verify(target)
            if v["opens"] and v.get("nodes") != base_nodes:
                v["problems"].append(f"target has {v.get('nodes')} states, not {base_nodes}")
        else:
            before = verify(dest)
            kill_at(
                kgagent("memory", "merge", str(archive), "--into", str(dest)),
                rng.uniform(0.2, 1.3 * t_import),
            )
            v = verify(dest)
            if v["opens"] and v.get("nodes", 0) < before.get("nodes", 0):
                v["lost"] += before["nodes"] - v["nodes"]
        tally["lost committed"] += v["lost"]
        for line in v.get("repaired", []):
            tally["next open " + line.split()[0]] += 1  # finished / undid / removed
        if not v["opens"] or v["problems"]:
            tally["failing check"] += 1
            print(f"  kill {i} ({op}): {v['problems']}")
        else:
            tally["survived"] += 1
        print(
            f"  kill {i + 1}/{n} {op}: {'ok' if v['opens'] and not v['problems'] else 'FAIL'}",
            flush=True,
        )
    timed(kgagent("memory", "export", str(out), "--memory", str(base), "--force"))
    left = list(out.parent.glob(f".{out.name}.*.tmp")) + list(box.glob(".kill-*.import-*"))
    tally["leftovers not removed"] += len(left)


# ------------------------------------------------------------------ disk-full sweep
def disk_sweep(runs: int, rng: random.Random, box: Path, tally: Counter) -> None:
    from kgagent.memory.diskspace import DEFAULT_RESERVE_BYTES, free_bytes

    for r in range(runs):
        mnt = box / f"disk-{r}"
        mnt.mkdir()
        size_mib = DEFAULT_RESERVE_BYTES // (1 << 20) + 32
        res = run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(mnt)], 60)
        if res.returncode != 0:
            print(f"disk-full sweep: skipped (cannot mount a tmpfs: {res.stderr.strip()})")
            tally["disk skipped"] = runs
            return
        try:
            mem = mnt / "m"
            play = kgagent("play", "--env", "civgame", "--memory", str(mem), "--quiet")
            play += ["--seed", str(r), "--steps"]
            first = run(play + ["2"])
            if first.returncode != 0:
                raise SystemExit(f"disk sweep setup failed: {first.stderr}")
            slack = int(rng.uniform(0.3, 2.0) * (1 << 20))
            with open(mnt / "filler", "wb") as f:
                os.posix_fallocate(
                    f.fileno(), 0, max(1, free_bytes(mnt) - DEFAULT_RESERVE_BYTES - slack)
                )
            tally["disk runs"] += 1
            try:
                res = run(play + ["400"])
            except subprocess.TimeoutExpired:
                tally["disk hangs"] += 1
                continue
            errors = [x for x in res.stderr.splitlines() if x.startswith("error:")]
            if "Traceback" in res.stderr:
                tally["disk tracebacks"] += 1
            if res.returncode == 1 and len(errors) == 1 and "reserve" in errors[0]:
                tally["disk stopped cleanly"] += 1
            elif res.returncode != 0:
                print(f"  disk run {r}: exit {res.returncode}: {res.stderr.strip()[-300:]}")
            (mnt / "filler").unlink()
            states, skills = committed_steps(mem / "runs")
            v = verify(mem, states, skills)
            tally["disk lost committed"] += v["lost"]
            if not v["opens"] or v["problems"]:
                tally["disk failing check"] += 1
            print(
                f"  disk run {r + 1}/{runs}: exit {res.returncode}, {len(states)} states logged",
                flush=True,
            )
        finally:
            run(["umount", "-l", str(mnt)], 60)


# ------------------------------------------------------------------ fuzz
def describe(tally: Counter) -> str:
    return ", ".join(f"{k[5:]} {v}" for k, v in sorted(tally.items()) if k.startswith("kind "))


def snapshot(root: Path, skip: tuple[Path, ...]) -> set[str]:
    out = set()
    for p in root.rglob("*"):
        if any(p == s or s in p.parents for s in skip):
            continue
        out.add(str(p.relative_to(root)))
    return out


def invoke(args: list[str], tally: Counter, stdin: bytes | None = None) -> str:
    """Run the CLI in process; classify: refused (one line, exit 1|2), accepted, traceback."""
    from click.testing import CliRunner
    from kgagent.cli.main import cli

    def alarm(*_: object) -> None:
        raise TimeoutError("input took too long")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    try:
        res = CliRunner().invoke(cli, args, input=stdin, catch_exceptions=True)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    tally["fuzz tried"] += 1
    if isinstance(res.exception, TimeoutError):
        tally["fuzz hangs"] += 1
        return "hang"
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        tally["fuzz tracebacks"] += 1
        print(f"  traceback: {args[:3]} {type(res.exception).__name__}: {res.exception}"[:300])
        return "traceback"
    if res.exit_code == 0:
        tally["fuzz accepted"] += 1
        return "accepted"
    errors = [x for x in res.output.splitlines() if x.startswith("error:")]
    if res.exit_code in (1, 2) and len(errors) == 1:
        tally["fuzz refused"] += 1
        return "refused"
    tally["fuzz tracebacks"] += 1
    print(f"  not one line: {args[:3]} exit {res.exit_code}: {res.output[-300:]}")
    return "traceback"


EVIL_NAMES = (
    "../evil",
    "/tmp/kgagent-evil",
    "blobs/../../evil",
    "graph/nodes/../../evil.parquet",
    "./archive.json",
    "blobs/ab/" + "a" * 64 + ".png/x",
    "x" * 300,
)


def archive_inputs(rng: random.Random, good: Path, box: Path, n: int) -> list[Path]:
    import hashlib
    import io
    import tarfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    with tarfile.open(good, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}
    raw = good.read_bytes()
    values = [None, "", "abc", -1, 0, 2**63, 1.5, float("nan"), True, [], {}, [1, 2], "x" * 5000]
    out = []
    for i in range(n):
        files = dict(members)
        kind = rng.choice(["flip", "truncate", "append", "json", "column", "name", "bomb", "drop"])
        path = box / f"a{i}.tar.gz"
        if kind in ("flip", "truncate", "append"):
            data = bytearray(raw)
            if kind == "flip":
                for _ in range(rng.randint(1, 8)):
                    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif kind == "truncate":
                data = data[: rng.randrange(len(data))]
            else:
                data += os.urandom(rng.randint(1, 4096))
            path.write_bytes(bytes(data))
            out.append((kind, path))
            continue
        if kind == "json":
            name = rng.choice(["archive.json", "manifest.json"])
            doc = json.loads(files[name])
            obj = doc
            keys = list(obj)
            key = rng.choice(keys)
            if isinstance(obj[key], dict) and obj[key] and rng.random() < 0.6:
                obj = obj[key]
                key = rng.choice(list(obj))
            obj[key] = rng.choice(values)
            files[name] = json.dumps(doc, allow_nan=True).encode()
        elif kind == "column":
            name = rng.choice([m for m in files if m.endswith(".parquet")])
            tab = pq.read_table(io.BytesIO(files[name]))
            if tab.num_rows and tab.num_columns:
                col = rng.randrange(tab.num_columns)
                t = tab.schema.field(col).type
                if pa.types.is_string(t):
                    v = rng.choice(["", "zz", "\x00", "{", "[{}]", "é" * 70, "../x"])
                elif pa.types.is_floating(t):
                    v = rng.choice([float("nan"), float("inf"), -1e308, 0.0])
                elif pa.types.is_integer(t):
                    v = rng.choice([-1, 0, 2**62])
                else:
                    v = None
                try:
                    arr = pa.array([v] * tab.num_rows, type=t)
                    tab = tab.set_column(col, tab.schema.field(col), arr)
                except (pa.ArrowException, TypeError, ValueError):
                    pass
                buf = io.BytesIO()
                pq.write_table(tab, buf)
                files[name] = buf.getvalue()
        elif kind == "name":
            files[rng.choice(EVIL_NAMES)] = b"evil"
        elif kind == "drop":
            files.pop(rng.choice(list(files)))
        sums = {k: v for k, v in files.items() if k != "SHA256SUMS"}
        files["SHA256SUMS"] = "".join(
            f"{hashlib.sha256(v).hexdigest()}  {k}\n" for k, v in sums.items()
        ).encode()
        with tarfile.open(path, "w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                if kind == "bomb" and name.startswith("blobs/"):
                    info.size = 2 << 30  # a header that claims 2 GiB; the body never comes
                    tar.addfile(info)
                    break
                if kind == "name" and name in EVIL_NAMES and rng.random() < 0.5:
                    info.type = rng.choice([tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE])
                    info.linkname = "/etc/passwd"
                    info.size = 0
                    tar.addfile(info)
                    continue
                tar.addfile(info, io.BytesIO(data))
        out.append((kind, path))
    return out


def config_inputs(rng: random.Random, box: Path, n: int) -> list[Path]:
    from kgagent.config import Config

    specs = [tuple(s.name.split(".", 1)) for s in Config.specs()]
    values = [
        "0",
        "-1",
        "1.5",
        "-5",
        "true",
        '"x"',
        "[]",
        "[1, 2]",
        "{a = 1}",
        "1e400",
        '"\\u0000"',
        "nan",
        "inf",
        '""',
        "99999999999999999999",
        "[0.5, -1]",
    ]
    out = []
    for i in range(n):
        p = box / f"c{i}.toml"
        r = rng.random()
        if r < 0.1:
            p.write_bytes(os.urandom(rng.randint(1, 300)))
        elif r < 0.15:
            p.write_text("[memory]\n" + "a = [" * 2000)
        else:
            lines = []
            for _ in range(rng.randint(1, 4)):
                if specs and rng.random() < 0.85:
                    sec, name = rng.choice(specs)
                else:
                    sec, name = rng.choice(["memory", "nosuch", "run"]), rng.choice(["x", "path"])
                lines.append(f"[{sec}]\n{name} = {rng.choice(values)}\n")
            p.write_text("".join(lines))
        out.append(("config", p))
    return out


QUERY_PARTS = (
    "/* ' */",
    '/* " */',
    "/* ` */",
    "// it's\n",
    "//",
    "\n",
    "\r",
    "/*",
    "*/",
    "'",
    '"',
    "`",
    "\\",
    ";",
    " ",
    "\u00a0",
    "\u2028",
    "\u200b",
    "$p",
    "RETURN 1 AS x",
    "MATCH (s:State) RETURN s.id",
    "COPY (MATCH (s:State) RETURN s.id) TO '{out}/copy.csv'",
    "EXPORT DATABASE '{out}/dump'",
    "LOAD FROM '/etc/passwd' (header=false) RETURN *",
    "CALL file_search_path='{out}'",
    "CALL threads=1",
    "INSTALL json",
    "LOAD EXTENSION '{out}/x.so'",
    "CHECKPOINT",
    "ATTACH '{out}/o.db' AS o (dbtype kuzu)",
    "CALL read_csv_serial('/etc/passwd') RETURN *",
    "CREATE (:State {id: 'fz'})",
    "COPY State FROM '{out}/x.csv'",
    "`COPY`",
    "'COPY'",
    "c\u043epy",
)


def query_inputs(rng: random.Random, out: Path, n: int) -> list[tuple[str, str]]:
    qs = []
    for _ in range(n):
        parts = [rng.choice(QUERY_PARTS) for _ in range(rng.randint(1, 7))]
        qs.append(("query", "".join(parts).replace("{out}", str(out))))
    return qs


def run_fuzz(n: int, rng: random.Random, box: Path, base: Path, tally: Counter) -> None:
    fz = box / "fuzz"
    fz.mkdir()
    good = fz / "good.kgmem.tar.gz"
    timed(kgagent("memory", "export", str(good), "--memory", str(base)))
    sentinel = fz / "sentinel"
    sentinel.mkdir()
    qmem = fz / "qmem"
    shutil.copytree(base, qmem)
    n_arch, n_conf = n // 4, n // 4
    inputs: list[tuple[str, Any]] = []
    inputs += archive_inputs(rng, good, fz, n_arch)
    inputs += config_inputs(rng, fz, n_conf)
    inputs += query_inputs(rng, sentinel, n - n_arch - n_conf)
    targets = fz / "targets"
    targets.mkdir()
    allowed = (targets, sentinel, qmem)
    before = snapshot(fz, allowed)
    watched = [Path("/tmp/kgagent-evil"), box / "evil", fz / "evil", box.parent / "evil"]
    for i, (kind, item) in enumerate(inputs):
        tally[f"kind {kind if kind in ('config', 'query') else 'archive'}"] += 1
        if kind == "config":
            verdict = invoke(
                ["memory", "info", "--memory", str(qmem), "--config", str(item)], tally
            )
        elif kind == "query":
            flags = ["--write"] if rng.random() < 0.3 else []
            verdict = invoke(
                ["query", "--memory", str(qmem), "--timeout", "20", *flags, item], tally
            )
            if any(sentinel.iterdir()) or (qmem / "graph.db.shadow").exists():
                tally["fuzz outside"] += 1
                print(f"  wrote outside: {item!r}")
                for p in sentinel.iterdir():
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
        else:
            t = targets / f"t{i}"
            verdict = invoke(["memory", "import", str(item), "--memory", str(t)], tally)
            if verdict == "accepted":
                v = verify(t)
                if not v["opens"] or v["problems"]:
                    tally["fuzz imported but failing check"] += 1
        if any(p.exists() for p in watched):
            tally["fuzz outside"] += 1
            print(f"  wrote outside: input {i} ({kind})")
            for p in watched:
                if p.exists():
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
        if (i + 1) % 100 == 0:
            print(f"  fuzz {i + 1}/{len(inputs)}", flush=True)
    stray = snapshot(fz, allowed) - before
    if stray:
        tally["fuzz outside"] += len(stray)
        print(f"  files outside the allowed places: {sorted(stray)[:5]}")


# ------------------------------------------------------------------ main
def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--engine", choices=("ladybug", "kuzu"), default=None)
    ap.add_argument("--kills", type=int, default=54)
    ap.add_argument("--disk-runs", type=int, default=4)
    ap.add_argument(
        "--fuzz", type=int, default=600, help="generated inputs (archives, configs, queries)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the sandbox directory")
    args = ap.parse_args()
    if args.engine:
        os.environ["KGAGENT_ENGINE"] = args.engine
    header(sys.argv[1:])
    rng = random.Random(args.seed)
    box = Path(tempfile.mkdtemp(prefix="kgagent-reliability-"))
    tally: Counter = Counter()
    t0 = time.monotonic()
    try:
        base = box / "base"
        timed(
            kgagent("play", "--env", "civgame", "--steps", "12", "--memory", str(base), "--quiet")
        )
        if args.kills:
            kill_sweep(args.kills, rng, box, base, tally)
        if args.disk_runs:
            disk_sweep(args.disk_runs, rng, box, tally)
        if args.fuzz:
            run_fuzz(args.fuzz, rng, box, base, tally)
    finally:
        if not args.keep:
            shutil.rmtree(box, ignore_errors=True)
    kills = sum(v for k, v in tally.items() if k.startswith("kills "))
    by_op = ", ".join(f"{k[6:]} {v}" for k, v in sorted(tally.items()) if k.startswith("kills "))
    print()
    print(
        f"kill sweep:  {kills} SIGKILLs ({by_op}): survived {tally['survived']} / lost committed "
        f"steps {tally['lost committed']} / memories failing check {tally['failing check']} / "
        f"leftovers not removed {tally['leftovers not removed']}"
    )
    print(
        f"             the next open finished {tally['next open finished']} interrupted "
        f"imports, undid {tally['next open undid']}, removed {tally['next open removed']} "
        "staging directories of killed processes"
    )
    if tally["disk skipped"]:
        print("disk-full:   skipped (no permission to mount a tmpfs)")
    else:
        print(
            f"disk-full:   {tally['disk runs']} runs: stopped cleanly in one line "
            f"{tally['disk stopped cleanly']} / hangs {tally['disk hangs']} / lost committed "
            f"{tally['disk lost committed']} / failing check {tally['disk failing check']} / "
            f"tracebacks {tally['disk tracebacks']}"
        )
    print(
        f"fuzz:        inputs tried {tally['fuzz tried']} ({describe(tally)}): refused in one "
        f"line {tally['fuzz refused']} / accepted {tally['fuzz accepted']} / tracebacks "
        f"{tally['fuzz tracebacks']} / wrote outside {tally['fuzz outside']} / hangs "
        f"{tally['fuzz hangs']} / imported but failing check "
        f"{tally['fuzz imported but failing check']}"
    )
    print(f"total time:  {time.monotonic() - t0:.0f} s")
    bad = (
        tally["lost committed"]
        + tally["failing check"]
        + tally["disk lost committed"]
        + tally["disk hangs"]
        + tally["disk tracebacks"]
        + tally["fuzz tracebacks"]
        + tally["fuzz outside"]
        + tally["fuzz hangs"]
    )
    print("targets met: " + ("yes" if bad == 0 else "NO"))
    sys.exit(0 if bad == 0 else 1)


if __name__ == "__main__":
    main()
