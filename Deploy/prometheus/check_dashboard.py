#!/usr/bin/env python3
"""Checks the Grafana dashboard against what really runs.

    python3 check_dashboard.py --pushd .build/debug/pushd [--dashboard FILE] [--broker HOST:PORT]

1. Every ``expr`` in the dashboard is parsed by a real Prometheus (Debian's ``prometheus``,
   started here on a free loopback port with this directory's rules loaded, stopped at the end):
   a query it refuses fails the check.
2. Every metric name an expression reads must be exported by something real: a ``pushd worker``
   and a ``pushd cleanup`` (each exports its own metrics)
   started here (its ``/metrics``; credentials made with the emulator's make_credentials.py,
   broker and database from PUSHD_AMQP_URL / PUSHD_DATABASE_URL), the RabbitMQ node's
   rabbitmq_prometheus endpoint (``--broker``, default the first of
   PUSHD_RABBITMQ_CLUSTER_PROMETHEUS), or a recording rule in ``rules/``.
3. The same for every expression of the alert and recording rules in ``rules/`` (promtool
   checks their syntax and their unit tests their logic, but on series the tests themselves
   name: a misspelled metric would pass both).
4. Self-test: a misspelled metric name and an unparseable query must both be reported, so a
   checker that cannot fail does not pass.

Exit status 0 only if all four hold. Needs Python 3 with ``cryptography`` (the tooling venv
of Deploy/lib.sh: ``$PUSHD_PYTHON``). Every wait is bounded.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# Grafana's built-in variables, replaced by something Prometheus accepts.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
            "and", "or", "unless", "inf", "nan", "Inf", "NaN", "atan2"}


def log(text: str) -> None:
    print(f"[check_dashboard] {text}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float, process: subprocess.Popen | None = None) -> bytes:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read()
        except (urllib.error.URLError, OSError) as error:
            last = error
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f}s: {last}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---------------------------------------------------------------- the dashboard

def expressions(node, found: list[str]) -> list[str]:
    """Every `expr` (panel targets) and templating `query` string, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expr" and isinstance(value, str) and value.strip():
                found.append(value)
            elif key == "query" and isinstance(value, str) and "(" in value:
                found.append(value)  # a templating query such as label_values(...)
            else:
                expressions(value, found)
    elif isinstance(node, list):
        for item in node:
            expressions(item, found)
    return found


def substitute(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (a small lexer, not a parser: strings, label
    matchers, ranges and grouping clauses are removed, function calls skipped)."""
    s = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    s = re.sub(r"'(?:\\.|[^'\\])*'", "''", s)
    s = re.sub(r"`[^`]*`", "``", s)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"\boffset\s+-?[0-9a-z]+", " ", s)
    if s.lstrip().startswith("label_values("):  # templating: label_values(metric, label)
        s = s.lstrip()[len("label_values("):].split(",")[0]
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", s):
        token = match.group(0)
        if token in KEYWORDS or s[match.end():].lstrip().startswith("("):
            continue
        names.add(token)
    return names


# ---------------------------------------------------------------- what really exists

def exposition_names(text: str) -> set[str]:
    """Sample names of a Prometheus text exposition, from its TYPE lines (a labelled counter
    nobody has incremented yet has no sample line, only HELP/TYPE) and its samples."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()[:4]
            names.add(name)
            if kind in ("histogram", "summary"):
                names.update({f"{name}_bucket", f"{name}_sum", f"{name}_count"})
            if kind == "counter" and not name.endswith("_total"):
                names.add(f"{name}_total")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def pushd_names(pushd: str, work: Path, command: str) -> set[str]:
    """Starts `pushd <command>` (worker or cleanup: each exports its own metrics) against the
    test broker and database, reads its /metrics."""
    credentials = work / "credentials"
    subprocess.run([sys.executable, str(REPO / "Deploy/emulator/make_credentials.py"), "--out", str(credentials),
                    "--bundle", "com.example.dashboard", "--project", "demo-project", "--port", "9"],
                   check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    amqp = os.environ.get("PUSHD_AMQP_URL", "")
    environment = dict(os.environ)
    environment.update({
        # One broker is enough to read the metric names (and works before and after the
        # several-broker failover).
        "PUSHD_AMQP_URL": amqp.split(",")[0],
        # The provisioned `pushd` topology, checked passively: this worker creates nothing.
        "PUSHD_TOPOLOGY_PREFIX": "pushd", "PUSHD_DECLARE_TOPOLOGY": "false",
        "PUSHD_METRICS_HOST": "127.0.0.1", "PUSHD_METRICS_PORT": str(port),
        "PUSHD_APNS_TEAM_ID": "TEAMID1234", "PUSHD_APNS_KEY_ID": "KEYID12345",
        "PUSHD_APNS_KEY_FILE": str(credentials / "AuthKey_KEYID12345.p8"),
        "PUSHD_APNS_BUNDLE_IDS": "com.example.dashboard",
        "PUSHD_FCM_SERVICE_ACCOUNT_FILES": str(credentials / "service-account-demo-project.json"),
        "PUSHD_SHUTDOWN_TIMEOUT_SECONDS": "5",
    })
    log_path = work / f"{command}.log"
    with open(log_path, "wb") as output:
        worker = subprocess.Popen([pushd, command], env=environment, stdout=output, stderr=subprocess.STDOUT)
    try:
        text = wait_for(f"http://127.0.0.1:{port}/metrics", 60, worker).decode()
    except RuntimeError:
        log(f"{command} log:\n{log_path.read_text()[-3000:]}")
        raise
    finally:
        stop(worker)
    names = exposition_names(text)
    if not any(name.startswith("pushd_") for name in names):
        raise RuntimeError(f"the {command}'s /metrics has no pushd_ metric:\n{text[:2000]}")
    return names


def broker_names(broker: str) -> set[str]:
    aggregated = wait_for(f"http://{broker}/metrics", 30).decode()
    detailed = wait_for(f"http://{broker}/metrics/detailed?vhost=%2f&family=queue_coarse_metrics"
                        "&family=queue_consumer_count", 30).decode()
    names = exposition_names(aggregated) | exposition_names(detailed)
    if "rabbitmq_detailed_queue_messages_ready" not in names:
        raise RuntimeError(f"{broker} does not export per-queue metrics (rabbitmq_prometheus /metrics/detailed)")
    return names


def rule_expressions() -> list[str]:
    """Every `expr:` of the rule files: one line, or a `|` block (what rules/*.yml use)."""
    found = []
    for rules in sorted((HERE / "rules").glob("*.yml")):
        lines = rules.read_text().splitlines()
        index = 0
        while index < len(lines):
            match = re.match(r"^(\s*)(?:-\s*)?expr:\s*(.*)$", lines[index])
            index += 1
            if not match:
                continue
            indent, rest = len(match.group(1)), match.group(2).strip()
            if rest not in ("|", "|-", ">", ">-"):
                found.append(rest)
                continue
            block = []
            while index < len(lines) and (not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent):
                block.append(lines[index].strip())
                index += 1
            found.append(" ".join(block))
    return found


def recorded_names() -> set[str]:
    names = set()
    for rules in sorted((HERE / "rules").glob("*.yml")):
        names.update(re.findall(r"^\s*-?\s*record:\s*(\S+)", rules.read_text(), flags=re.M))
    return names


# ---------------------------------------------------------------- Prometheus parses

class Prometheus:
    """Debian's Prometheus on a free loopback port, with the rules loaded and nothing scraped."""

    def __init__(self, work: Path):
        self.port = free_port()
        config = work / "prometheus.yml"
        rules = [str(path) for path in sorted((HERE / "rules").glob("*.yml"))]
        config.write_text(json.dumps({"global": {"evaluation_interval": "15s"}, "rule_files": rules}))
        self.log_path = work / "prometheus.log"
        with open(self.log_path, "wb") as output:
            self.process = subprocess.Popen(
                ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"], stdout=output, stderr=subprocess.STDOUT)
        try:
            wait_for(f"http://127.0.0.1:{self.port}/-/ready", 60, self.process)
        except RuntimeError:
            log(f"prometheus log:\n{self.log_path.read_text()[-3000:]}")
            self.stop()
            raise

    def parse_error(self, expr: str) -> str | None:
        """None if Prometheus accepts the query, else its error."""
        query = urllib.parse.urlencode({"query": substitute(expr), "time": "0"})
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/query?{query}", timeout=30) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        return None if body.get("status") == "success" else f"{body.get('errorType')}: {body.get('error')}"

    def stop(self) -> None:
        stop(self.process)


# ---------------------------------------------------------------- the check

def problems_in(exprs: list[str], known: set[str], prometheus: Prometheus) -> list[str]:
    problems = []
    for expr in exprs:
        error = prometheus.parse_error(expr)
        if error:
            problems.append(f"Prometheus refuses {expr!r}: {error}")
        for name in sorted(metric_names(expr) - known):
            problems.append(f"{expr!r} reads {name}, which nothing exports")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dashboard", default=str(REPO / "Deploy/grafana/pushd.json"))
    parser.add_argument("--pushd", default=str(REPO / ".build/debug/pushd"))
    default_broker = (os.environ.get("PUSHD_RABBITMQ_CLUSTER_PROMETHEUS") or "").split(",")[0] or None
    parser.add_argument("--broker", default=default_broker, help="host:port of a rabbitmq_prometheus endpoint")
    args = parser.parse_args()
    if not args.broker:
        parser.error("--broker (or PUSHD_RABBITMQ_CLUSTER_PROMETHEUS from `services.sh cluster-env`) is required")

    exprs = expressions(json.loads(Path(args.dashboard).read_text()), [])
    if not exprs:
        log(f"{args.dashboard} has no expressions")
        return 1
    with tempfile.TemporaryDirectory(prefix="pushd-dashboard-") as directory:
        work = Path(directory)
        worker = pushd_names(args.pushd, work, "worker") | pushd_names(args.pushd, work, "cleanup")
        broker = broker_names(args.broker)
        known = worker | broker | recorded_names() | {"up"}
        log(f"{len(exprs)} dashboard and {len(rule_expressions())} rule expressions; {len(worker)} worker, {len(broker)} broker and "
            f"{len(recorded_names())} recorded names known")
        prometheus = Prometheus(work)
        try:
            problems = problems_in(exprs, known, prometheus)
            rules = rule_expressions()
            problems += [f"rules/: {problem}" for problem in problems_in(rules, known, prometheus)]
            # The check must be able to fail: one misspelled name, one broken query.
            target = next(e for e in exprs if any(n.startswith("pushd_") for n in metric_names(e)))
            misspelled = re.sub(r"pushd_(\w+)", r"pushd_\1x", target, count=1)
            broken = target + ")"
            caught_name = any("which nothing exports" in p for p in problems_in([misspelled], known, prometheus))
            caught_parse = any("refuses" in p for p in problems_in([broken], known, prometheus))
        finally:
            prometheus.stop()
    if not (caught_name and caught_parse):
        problems.append(f"self-test: misspelled name caught {caught_name}, broken query caught {caught_parse}")
    for problem in problems:
        log(problem)
    log(f"{'FAILED' if problems else 'OK'}: {len(exprs)} dashboard and {len(rule_expressions())} rule expressions, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
