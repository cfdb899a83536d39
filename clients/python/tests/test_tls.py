"""TLS and mutual TLS against the real gateway, with a throwaway CA made by
the openssl command line tool."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from conftest import StartGateway, run

from skillgate import Client, ConnectionClosedError

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _signed(cwd: Path, name: str, cn: str, extensions: str) -> None:
    (cwd / f"{name}.ext").write_text(extensions + "\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=cwd)  # fmt: skip
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "1", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=skillgate test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)  # fmt: skip
    _signed(d, "server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth")
    _signed(d, "client", "pytest client", "extendedKeyUsage=clientAuth")
    return d


def _tls_gateway(start_gateway: StartGateway, pki: Path, *extra: str) -> tuple[str, int]:
    gw = start_gateway("--tls-listen", "127.0.0.1:0", "--tls-cert", str(pki / "server.pem"),
                       "--tls-key", str(pki / "server.key"), *extra)  # fmt: skip
    return gw.addrs["tls"]


def test_tls_with_a_ca_file(start_gateway: StartGateway, pki: Path) -> None:
    host, port = _tls_gateway(start_gateway, pki)

    async def body() -> None:
        async with Client(host, port, ca_file=str(pki / "ca.pem")) as c:
            assert (await c.list_skills())["skills"]
        ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        async with Client(host, port, tls=ctx, server_hostname="localhost") as c:
            assert await c.ping() >= 0

    run(body)


def test_tls_refuses_an_unknown_server_certificate(start_gateway: StartGateway, pki: Path) -> None:
    host, port = _tls_gateway(start_gateway, pki)

    async def body() -> None:
        with pytest.raises(ConnectionClosedError, match="cannot connect.*CERTIFICATE_VERIFY_FAILED"):
            await Client(host, port, tls=True).connect()  # system roots do not know the test CA

    run(body)


def test_mutual_tls(start_gateway: StartGateway, pki: Path) -> None:
    host, port = _tls_gateway(start_gateway, pki, "--tls-client-ca", str(pki / "ca.pem"))

    async def body() -> None:
        cert = dict(ca_file=str(pki / "ca.pem"), cert_file=str(pki / "client.pem"), key_file=str(pki / "client.key"))
        async with Client(host, port, **cert) as c:  # type: ignore[arg-type]
            assert (await c.describe_skill("acme.math.add"))["skill"]["name"] == "acme.math.add"
        # Without a certificate the gateway ends the handshake; with TLS 1.3
        # the client learns it on its first read, i.e. during Initialize.
        with pytest.raises(ConnectionClosedError, match="CERTIFICATE_REQUIRED"):
            await Client(host, port, ca_file=str(pki / "ca.pem")).connect()

    run(body)
