#!/usr/bin/env python3
"""How early each reply's transmit timestamp is, by its position in a batch.

Usage: measure-burst-position.py AUTHTIME PORT ROUNDS

Starts `AUTHTIME serve` on 127.0.0.1:PORT (one worker, rate limiting off),
then ROUNDS times: pauses it (SIGSTOP), sends 32 requests, resumes it
(SIGCONT), so that it reads the 32 in one recvmmsg batch, and takes each
reply's kernel receive time (SO_TIMESTAMPNS) minus its transmit timestamp.
Client and server share one clock. Prints the median and 90th percentile by
position. Used for docs/served-time.md to compare two builds:

    scripts/measure-burst-position.py target/release/authtime 11301 50
"""
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

SO_TIMESTAMPNS = 35
NTP_UNIX_OFFSET = 2208988800


def ntp_bits(sec, nsec):
    return ((sec + NTP_UNIX_OFFSET) << 32) + (nsec << 32) // 10**9


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "serve.toml")
        with open(conf, "w") as f:
            f.write(
                f'[ntp]\nlisten = ["127.0.0.1:{port}"]\nworkers = 1\n'
                '[rate-limit]\nenabled = false\n'
                '[clock]\nsource = "static"\nstratum = 1\nreference-id = "GPS"\n'
            )
        server = subprocess.Popen([binary, "serve", "--config", conf],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            s.settimeout(2)
            by_position = [[] for _ in range(32)]
            for r in range(rounds):
                os.kill(server.pid, signal.SIGSTOP)
                for k in range(32):
                    request = struct.pack("!BBbbIIIQQQQ", 0x23, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          (r << 32) | k)
                    s.sendto(request, ("127.0.0.1", port))
                os.kill(server.pid, signal.SIGCONT)
                for _ in range(32):
                    data, ancillary, _, _ = s.recvmsg(1024, 1024)
                    sec, nsec = struct.unpack("qq", ancillary[0][2][:16])
                    origin, _, transmit = struct.unpack("!QQQ", data[24:48])
                    early = ntp_bits(sec, nsec) - transmit
                    by_position[origin & 0xFFFFFFFF].append((early * 10**9) >> 32)
                time.sleep(0.02)
        finally:
            server.terminate()
            server.wait()
    for k in [0, 1, 3, 7, 15, 23, 31]:
        v = sorted(by_position[k])
        print(f"position {k:2d}: median {statistics.median(v) / 1000:8.1f} µs"
              f"  p90 {v[int(0.9 * len(v))] / 1000:8.1f} µs")


if __name__ == "__main__":
    main()
