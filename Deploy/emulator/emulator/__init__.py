"""Local APNs + FCM + OAuth2 emulator: the project's only test double for the push providers.

It speaks the real wire protocols (HTTP/2 over TLS, ES256/RS256 JWTs, Apple's and Google's
error bodies) so that the delivery workers can be exercised end to end without a network.
"""
