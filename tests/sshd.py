"""A real OpenSSH server on localhost for the team tests and benchmarks: a free port,
a throwaway host key and user key, its own sshd_config, no system service.

`start_sshd(folder)` returns the server (stop it with `.stop()`); `.ssh_command` is
what a remote's `--ssh-command` needs and `.url(path)` the remote URL of a folder.
"""

from __future__ import annotations

import getpass
import os
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = Path(os.environ.get("REGISTRY_SSHD", "/usr/sbin/sshd"))
SFTP_SERVER = next((p for p in (Path("/usr/lib/openssh/sftp-server"),
                                Path("/usr/libexec/openssh/sftp-server")) if p.exists()),
                   Path("/usr/lib/openssh/sftp-server"))


@dataclass
class Sshd:
    process: subprocess.Popen[bytes]
    port: int
    user: str
    user_key: Path
    known_hosts: Path
    folder: Path

    @property
    def ssh_command(self) -> str:
        return shlex.join(["ssh", "-i", str(self.user_key), "-o", "IdentitiesOnly=yes",
                           "-o", f"UserKnownHostsFile={self.known_hosts}",
                           "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                           "-F", "/dev/null"])

    def url(self, path: Path) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sshd(folder: Path) -> Sshd:
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)],
                       check=True)
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    os.chmod(folder / "authorized_keys", 0o600)
    port = free_port()
    host_pub = (folder / "host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "UsePAM no",
        "StrictModes no", f"PidFile {folder / 'sshd.pid'}", f"Subsystem sftp {SFTP_SERVER}",
        "PermitRootLogin prohibit-password", "LogLevel ERROR", "MaxStartups 100",
        "MaxSessions 100", "",
    ]))
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory sshd checks for
    with open(folder / "sshd.log", "wb") as log:  # the child keeps its own descriptor
        process = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)],
                                   stdout=subprocess.DEVNULL, stderr=log)
    server = Sshd(process=process, port=port, user=getpass.getuser(),
                  user_key=folder / "user_key", known_hosts=folder / "known_hosts", folder=folder)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(folder / 'sshd.log').read_text()}")
        done = subprocess.run([*shlex.split(server.ssh_command), "-p", str(port),
                               f"{server.user}@127.0.0.1", "true"], capture_output=True)
        if done.returncode == 0:
            return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"sshd did not accept a login: {(folder / 'sshd.log').read_text()}")
