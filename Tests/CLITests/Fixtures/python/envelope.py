"""The envelope scheme in Python `cryptography`, an implementation independent of ours.

    python3 envelope.py decrypt PRIVATE_KEY_PEM     (envelope JSON on stdin, plaintext out)
    python3 envelope.py encrypt PUBLIC_KEY_FILE     (plaintext on stdin, envelope JSON out)
    python3 envelope.py check-public PRIVATE_KEY_PEM PUBLIC_KEY_FILE FORMAT
"""
import base64
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

OAEP = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)


def load_public(text: str):
    text = text.strip()
    if text.startswith("-----BEGIN RSA PUBLIC KEY"):
        return serialization.load_pem_public_key(text.encode())
    if text.startswith("-----BEGIN"):
        return serialization.load_pem_public_key(text.encode())
    der = base64.b64decode(text)
    try:
        return serialization.load_der_public_key(der)
    except ValueError:
        pem = b"-----BEGIN RSA PUBLIC KEY-----\n" + base64.encodebytes(der) + b"-----END RSA PUBLIC KEY-----\n"
        return serialization.load_pem_public_key(pem)


def main() -> None:
    mode, key_path = sys.argv[1], sys.argv[2]
    key_text = open(key_path).read()
    data = sys.stdin.buffer.read()
    if mode == "decrypt":
        private = serialization.load_pem_private_key(key_text.encode(), password=None)
        envelope = json.loads(data)
        if isinstance(envelope, str):
            envelope = json.loads(envelope)
        key = private.decrypt(base64.b64decode(envelope["encrypted_key"]), OAEP)
        plaintext = AESGCM(key).decrypt(
            base64.b64decode(envelope["nonce"]),
            base64.b64decode(envelope["cipher_text"]) + base64.b64decode(envelope["tag"]),
            None,
        )
        sys.stdout.buffer.write(plaintext)
    elif mode == "encrypt":
        public = load_public(key_text)
        key, nonce = AESGCM.generate_key(bit_length=256), os.urandom(12)
        sealed = AESGCM(key).encrypt(nonce, data, None)
        b64 = lambda b: base64.b64encode(b).decode()
        sys.stdout.write(json.dumps({
            "encrypted_key": b64(public.encrypt(key, OAEP)),
            "cipher_text": b64(sealed[:-16]),
            "nonce": b64(nonce),
            "tag": b64(sealed[-16:]),
        }))
    elif mode == "check-public":
        private = serialization.load_pem_private_key(key_text.encode(), password=None)
        public = load_public(open(sys.argv[3]).read())
        same = public.public_numbers() == private.public_key().public_numbers()
        sys.stdout.write("match" if same else "mismatch")
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
