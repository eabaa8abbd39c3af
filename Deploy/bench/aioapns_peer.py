"""A peer for `pushd bench pipeline`: the Python `aioapns` sender (PyPI) pushing the same
alert, without encryption, to the same emulator. Prints one JSON line:
{"sent": N, "delivered": N, "seconds": S, "rate": N/S}.

aioapns always dials api.push.apple.com:443; the emulator is reached by pointing its
production protocol class at the emulator's host and port, and trusting the emulator's CA.
"""
import argparse
import asyncio
import json
import ssl
import time
from urllib.parse import urlsplit

from aioapns import APNs, NotificationRequest
from aioapns.connection import APNsProductionClientProtocol


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the emulator, https://host:port")
    parser.add_argument("--ca-file", required=True)
    parser.add_argument("--p8", required=True)
    parser.add_argument("--key-id", default="KEYID12345")
    parser.add_argument("--team-id", default="TEAMID1234")
    parser.add_argument("--bundle", default="com.example.app")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=400)
    parser.add_argument("--connections", type=int, default=4)
    args = parser.parse_args()

    url = urlsplit(args.url)
    APNsProductionClientProtocol.APNS_SERVER = url.hostname
    APNsProductionClientProtocol.APNS_PORT = url.port or 443
    context = ssl.create_default_context(cafile=args.ca_file)
    context.set_alpn_protocols(["h2"])
    with open(args.p8) as handle:
        key = handle.read()
    client = APNs(key=key, key_id=args.key_id, team_id=args.team_id, topic=args.bundle,
                  max_connections=args.connections, ssl_context=context, use_sandbox=False)
    message = {"aps": {"alert": {"title": "New message", "body": "Open the app to read it"}, "mutable-content": 1}}
    token = "ab" * 32

    async def send(index: int) -> bool:
        request = NotificationRequest(device_token=token, message=message, collapse_key=f"aioapns-{index}")
        return (await client.send_notification(request)).is_successful

    await send(-1)  # warm up: connection, TLS, first authenticated stream
    remaining = iter(range(args.requests))
    delivered = 0

    async def lane() -> None:
        nonlocal delivered
        for index in remaining:
            if await send(index):
                delivered += 1

    started = time.monotonic()
    await asyncio.gather(*(lane() for _ in range(args.concurrency)))
    elapsed = time.monotonic() - started
    print(json.dumps({"sent": args.requests, "delivered": delivered, "seconds": elapsed,
                      "rate": args.requests / elapsed}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
