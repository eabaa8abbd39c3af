"""Scripted outcomes chosen by device-token prefix, plus random faults for load tests.

Tests and load runs need to provoke every provider answer on demand. Encoding the outcome in
the token (a hex prefix for APNs, a word for FCM) keeps the emulator stateless per request and
lets a test choose an outcome simply by choosing a token. Rules run only after a request has
passed every authentication and header check, exactly where the real provider would answer
about the device.
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from .config import ConfigError


@dataclass(frozen=True, slots=True)
class Rule:
    prefix: str
    #: HTTP status of the scripted failure; 200 means "succeed" (useful with ``delay``).
    status: int = 200
    #: APNs ``reason`` or FCM ``errorCode``.
    reason: str | None = None
    #: Seconds to wait before answering.
    delay: float = 0.0
    #: Fail only the first N attempts for the same exact token, then succeed.
    fail_times: int | None = None
    retry_after: int | None = None
    #: APNs 410 ``timestamp``: "now" (ms at reply time) or a fixed value in ms.
    timestamp: int | str | None = None
    #: FCM error message override.
    message: str | None = None
    #: APNs only: the rule applies only to requests for this environment ("production" or
    #: "sandbox"); elsewhere the token is fine. A token registered under the other environment
    #: is what Apple answers ``BadDeviceToken`` for.
    environment: str | None = None


def default_apns_rules(slow_delay: float) -> list[Rule]:
    return [
        Rule("410a", 410, "Unregistered", timestamp="now"),
        Rule("410e", 410, "ExpiredToken"),
        Rule("400b", 400, "BadDeviceToken"),
        # A sandbox token: BadDeviceToken in production only (and the reverse).
        Rule("5bd0", 400, "BadDeviceToken", environment="production"),
        Rule("9bd0", 400, "BadDeviceToken", environment="sandbox"),
        Rule("4030", 400, "DeviceTokenNotForTopic"),
        Rule("4290", 429, "TooManyRequests"),
        Rule("5000", 500, "InternalServerError"),
        Rule("5030", 503, "ServiceUnavailable"),
        Rule("5100", delay=slow_delay),
        Rule("fa11", 503, "ServiceUnavailable", fail_times=2, retry_after=1),
    ]


def default_fcm_rules(slow_delay: float) -> list[Rule]:
    return [
        Rule("unregistered-", 404, "UNREGISTERED"),
        Rule("invalid-", 400, "INVALID_ARGUMENT",
             message="The registration token is not a valid FCM registration token"),
        Rule("mismatch-", 403, "SENDER_ID_MISMATCH"),
        Rule("quota-", 429, "QUOTA_EXCEEDED", retry_after=1),
        Rule("unavailable-", 503, "UNAVAILABLE"),
        Rule("internal-", 500, "INTERNAL"),
        Rule("flaky-", 503, "UNAVAILABLE", fail_times=2, retry_after=1),
        Rule("slow-", delay=slow_delay),
    ]


_RULE_KEYS = {"prefix", "status", "reason", "error_code", "delay", "fail_times", "retry_after",
              "timestamp", "message", "environment"}
ENVIRONMENTS = ("production", "sandbox")


def parse_rule(raw: object, where: str, status_for: Callable[[str], int | None]) -> Rule:
    """``status_for`` gives the provider's usual status for a reason, so a config rule may name
    just the reason (``{"prefix": "dead", "reason": "Unregistered"}``)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("prefix"), str) or not raw["prefix"]:
        raise ConfigError(f"{where}: a rule is an object with a non-empty string prefix")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown rule keys {sorted(unknown)}")
    reason = raw.get("reason", raw.get("error_code"))
    status = raw.get("status")
    if status is None:
        status = (status_for(reason) if isinstance(reason, str) else None) or 200
    if not isinstance(status, int) or not 200 <= status <= 599:
        raise ConfigError(f"{where}: status must be an HTTP status code")
    if status != 200 and not isinstance(reason, str):
        raise ConfigError(f"{where}: a failing rule needs a reason (APNs) or error_code (FCM)")
    fail_times = raw.get("fail_times")
    if fail_times is not None and (not isinstance(fail_times, int) or fail_times < 1 or status == 200):
        raise ConfigError(f"{where}: fail_times must be a positive integer on a failing rule")
    timestamp = raw.get("timestamp")
    if timestamp is not None and timestamp != "now" and not isinstance(timestamp, int):
        raise ConfigError(f"{where}: timestamp is \"now\" or milliseconds since the epoch")
    delay = raw.get("delay", 0.0)
    if not isinstance(delay, (int, float)) or delay < 0:
        raise ConfigError(f"{where}: delay is a non-negative number of seconds")
    retry_after = raw.get("retry_after")
    if retry_after is not None and (not isinstance(retry_after, int) or retry_after < 0):
        raise ConfigError(f"{where}: retry_after is a non-negative integer")
    environment = raw.get("environment")
    if environment is not None and environment not in ENVIRONMENTS:
        raise ConfigError(f"{where}: environment is \"production\" or \"sandbox\"")
    return Rule(raw["prefix"], status, reason, float(delay), fail_times, retry_after, timestamp,
                raw.get("message"), environment)


class RuleBook:
    """Longest matching prefix wins, so a config can refine a default (``410a00`` vs ``410a``)."""

    def __init__(self, rules: list[Rule], case_insensitive: bool) -> None:
        self._case_insensitive = case_insensitive
        by_prefix = {self._norm(rule.prefix): rule for rule in rules}
        self._rules = sorted(by_prefix.items(), key=lambda item: -len(item[0]))
        self._first_chars = {prefix[0] for prefix, _ in self._rules}

    def _norm(self, text: str) -> str:
        return text.lower() if self._case_insensitive else text

    @property
    def rules(self) -> list[Rule]:
        return [rule for _, rule in self._rules]

    def match(self, token: str) -> Rule | None:
        token = self._norm(token)
        if not token or token[0] not in self._first_chars:
            return None  # the common case under load: no rule, no loop
        for prefix, rule in self._rules:
            if token.startswith(prefix):
                return rule
        return None

    @classmethod
    def from_config(cls, service: str, defaults: list[Rule], section: dict,
                    status_for: Callable[[str], int | None]) -> "RuleBook":
        """``section`` is the config's ``rules`` object: ``{"replace_defaults": bool,
        "apns": [...], "fcm": [...]}``; configured prefixes override defaults of the same prefix."""
        configured = section.get(service, [])
        if not isinstance(configured, list):
            raise ConfigError(f"rules.{service} must be a list")
        parsed = [parse_rule(raw, f"rules.{service}[{i}]", status_for) for i, raw in enumerate(configured)]
        base = [] if section.get("replace_defaults") else defaults
        return cls(base + parsed, case_insensitive=(service == "apns"))


class AttemptCounter:
    """Per-token attempt numbers for ``fail_times`` rules, bounded so that a load test over
    millions of flaky tokens cannot exhaust memory (the oldest tokens are forgotten)."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._counts: OrderedDict[str, int] = OrderedDict()

    def next_attempt(self, key: str) -> int:
        count = self._counts.get(key, 0) + 1
        if count == 1 and len(self._counts) >= self._capacity:
            self._counts.popitem(last=False)
        self._counts[key] = count
        return count

    def reset(self) -> None:
        self._counts.clear()


class FaultInjector:
    """``--fail-rate``: fail that fraction of otherwise-good requests with a retryable error."""

    STATUSES = (429, 500, 503)

    def __init__(self, rate: float, seed: int | None) -> None:
        self.rate = rate
        self._random = random.Random(seed)

    def pick(self) -> int | None:
        if self.rate <= 0.0 or self._random.random() >= self.rate:
            return None
        return self._random.choice(self.STATUSES)
