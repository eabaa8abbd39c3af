"""The ``aps`` rules of a Live Activity push (``apns-push-type: liveactivity``), per event.

Apple accepts a malformed Live Activity payload with 200 and the phone silently drops it (for
example "Unable to decode content state"), so a delivery bug would go unnoticed. The emulator
is stricter: it refuses such a payload with 400 and the emulator-only reason
``BadLiveActivityPayload`` plus a ``detail`` naming the broken rule. The rules are those of
ActivityKit's documentation (see shared/PROTOCOLS.md, "Live Activities over APNs"):

* ``event`` is ``start``, ``update`` or ``end`` (a broadcast cannot ``start``: push-to-start
  needs a push-to-start token);
* ``timestamp`` (epoch **seconds**, newest wins) is always required;
* ``start`` needs ``attributes-type``, ``attributes``, ``content-state`` and ``alert``;
  ``update`` needs ``content-state``; ``end`` may carry a final ``content-state``;
* ``attributes-type``, ``attributes``, ``input-push-token`` and ``input-push-channel`` only
  with ``start``; ``dismissal-date`` only with ``end``;
* ``stale-date`` and ``dismissal-date`` are epoch seconds, ``relevance-score`` a number.
"""
from __future__ import annotations

import base64
import binascii

REASON = "BadLiveActivityPayload"
EVENTS = ("start", "update", "end")
#: Epoch seconds beyond this are almost certainly milliseconds (year 2286 in seconds).
MAX_EPOCH_SECONDS = 10_000_000_000
#: The keys ActivityKit reads in a Live Activity's ``aps``; anything else is refused, as a
#: misspelt key (``stale_date``, ``events``) would silently be ignored by the phone.
KNOWN_KEYS = frozenset({"event", "timestamp", "content-state", "attributes-type", "attributes",
                        "alert", "stale-date", "dismissal-date", "relevance-score",
                        "input-push-token", "input-push-channel"})
_START_ONLY = ("attributes-type", "attributes", "input-push-token", "input-push-channel")
_ALERT_TEXT_KEYS = ("title", "body", "title-loc-key", "loc-key")


def _is_epoch_seconds(value: object) -> bool:
    return type(value) is int and 0 <= value < MAX_EPOCH_SECONDS


def _is_number(value: object) -> bool:
    return type(value) in (int, float)


def is_channel_id(value: object) -> bool:
    """Apple's channel ids are standard base64 (with padding); at most 128 characters here."""
    if not isinstance(value, str) or not 4 <= len(value) <= 128 or len(value) % 4:
        return False
    try:
        return base64.b64encode(base64.b64decode(value, validate=True)).decode() == value
    except (binascii.Error, ValueError):
        return False


def _alert_problem(alert: object) -> str | None:
    if not isinstance(alert, dict):
        return "alert must be a dictionary with a title or body"
    if not any(isinstance(alert.get(key), str) and alert.get(key) for key in _ALERT_TEXT_KEYS):
        return "alert needs a non-empty title or body"
    return None


def problem(aps: dict, broadcast: bool = False) -> str | None:
    """Why this ``aps`` is not a valid Live Activity payload, or None."""
    unknown = sorted(set(aps) - KNOWN_KEYS)
    if unknown:
        return f"unknown aps keys for a Live Activity: {', '.join(unknown)}"
    event = aps.get("event")
    if event not in EVENTS:
        return "event must be one of start, update, end"
    if broadcast and event == "start":
        return "a broadcast cannot start a Live Activity (push-to-start needs a push-to-start token)"
    if "timestamp" not in aps:
        return "timestamp is required"
    if not _is_epoch_seconds(aps["timestamp"]):
        return "timestamp must be an integer number of epoch seconds"
    if event != "start":
        present = [key for key in _START_ONLY if key in aps]
        if present:
            return f"{', '.join(present)} only with event start"
    if "dismissal-date" in aps:
        if event != "end":
            return "dismissal-date only with event end"
        if not _is_epoch_seconds(aps["dismissal-date"]):
            return "dismissal-date must be an integer number of epoch seconds"
    if "stale-date" in aps and not _is_epoch_seconds(aps["stale-date"]):
        return "stale-date must be an integer number of epoch seconds"
    if "relevance-score" in aps and not _is_number(aps["relevance-score"]):
        return "relevance-score must be a number"
    if event in ("start", "update") and "content-state" not in aps:
        return f"content-state is required with event {event}"
    if "content-state" in aps and not isinstance(aps["content-state"], dict):
        return "content-state must be a dictionary (the app's ContentState)"
    if "alert" in aps:
        alert_problem = _alert_problem(aps["alert"])
        if alert_problem is not None:
            return alert_problem
    if event == "start":
        return _start_problem(aps)
    return None


def _start_problem(aps: dict) -> str | None:
    attributes_type = aps.get("attributes-type")
    if not isinstance(attributes_type, str) or not attributes_type:
        return "attributes-type (the unqualified Swift type name) is required with event start"
    if "." in attributes_type:
        return "attributes-type is the unqualified type name (no module prefix)"
    if not isinstance(aps.get("attributes"), dict):
        return "attributes (a dictionary) is required with event start"
    if "alert" not in aps:
        return "alert is required with event start"
    if "input-push-token" in aps and aps["input-push-token"] != 1:
        return "input-push-token must be 1"
    if "input-push-channel" in aps and not is_channel_id(aps["input-push-channel"]):
        return "input-push-channel must be a base64 channel id"
    if "input-push-token" in aps and "input-push-channel" in aps:
        return "input-push-token and input-push-channel are exclusive"
    return None
