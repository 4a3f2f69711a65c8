"""`mnemo serve` against a browser's attacks, over real HTTP to a real uvicorn on loopback: a page
whose DNS name was rebound to 127.0.0.1 (a forged Host), a change posted from another origin, a
CORS client that carries the token, signing in without the token in a URL, and HTTPS."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import httpx
import pytest

from conftest import serving


def test_a_rebound_host_name_reads_nothing_and_changes_need_this_pages_origin(people_store):
    with serving(people_store, hosts=("mnemo.lan",)) as url, httpx.Client(base_url=url) as client:
        assert client.get("/people").status_code == 200  # Host: 127.0.0.1:PORT
        port = url.rsplit(":", 1)[1]
        for host in ("evil.example", f"attacker.example:{port}", "127.0.0.1.nip.io", ""):
            reply = client.get("/people", headers={"Host": host})
            assert reply.status_code == 421 and "does not answer for host" in reply.json()["error"], host
            assert "voice_1" not in reply.text
        for host in (f"localhost:{port}", f"[::1]:{port}", f"mnemo.lan:{port}"):
            assert client.get("/health", headers={"Host": host}).status_code == 200, host
        rename = {"name": "Mallory"}
        forged = client.post("/people/voice_1/name", json=rename, headers={"Origin": "http://evil.example"})
        assert forged.status_code == 403 and "refused" in forged.json()["error"]
        other_port = client.post("/people/voice_1/name", json=rename, headers={"Origin": "http://127.0.0.1:1"})
        assert other_port.status_code == 403  # another server on this machine is another origin
        assert not any(p.name == "Mallory" for p in people_store.people())
        own = client.post("/people/voice_1/name", json=rename, headers={"Origin": url})
        assert own.status_code == 200  # the page's own request
        assert client.post("/people/undo", json={}).status_code == 200  # no Origin: curl, scripts


def test_a_configured_origin_calls_with_the_token_and_the_page_signs_in_without_it_in_the_url(people_store):
    origin = "https://notes.example"
    with serving(people_store, token="tok-3141", cors_origins=(origin,)) as url, httpx.Client(base_url=url) as client:
        preflight = client.options("/ask", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "authorization,content-type"})
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == origin
        asked = client.post("/ask", json={"question": "Who went to Lisbon?"},
                            headers={"Origin": origin, "Authorization": "Bearer tok-3141"})
        assert asked.status_code == 200 and asked.headers["access-control-allow-origin"] == origin
        assert client.post("/ask", json={"question": "x"}, headers={"Origin": origin}).status_code == 401
        # the page: a sign-in form, the token posted as JSON, an HttpOnly SameSite=Strict cookie back
        assert client.get("/").status_code == 401
        assert client.post("/login", json={"token": "wrong"}).status_code == 401
        assert client.post("/login", data={"token": "tok-3141"}).status_code == 415  # a cross-site form cannot
        signed = client.post("/login", json={"token": "tok-3141"})
        cookie = signed.headers["set-cookie"].lower()
        assert signed.status_code == 200 and "httponly" in cookie and "samesite=strict" in cookie
        assert "secure" not in cookie  # plain HTTP: a Secure cookie would never come back
        page = client.get("/")
        assert page.status_code == 200 and "timeline.js" in page.text


def _self_signed(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(minutes=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))


def test_https_serves_with_a_secure_cookie(people_store, tmp_path):
    _self_signed(tmp_path)
    with serving(people_store, (str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")), token="tok-2718",
                 tls=True) as url:
        assert url.startswith("https://")
        import ssl

        trust = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
        with httpx.Client(base_url=url, verify=trust) as client:
            signed = client.post("/login", json={"token": "tok-2718"})
            assert signed.status_code == 200 and "secure" in signed.headers["set-cookie"].lower()
            assert client.get("/health", headers={"Authorization": "Bearer tok-2718"}).json()["status"] == "ok"
        with pytest.raises(httpx.HTTPError):
            httpx.get(url.replace("https://", "http://") + "/health", timeout=5)
