"""Benchmark of the Action's image: its size and how fast it starts (prints figures; not a test).

1. Size: the image's uncompressed size (what `docker images` shows), each layer's, and what
   the big parts weigh inside it (du). Target: every criterion in at most 400 MB.
2. Start: `docker run --rm IMAGE --help`, timed from the host, cold (the first run after
   --build, and every run after dropping the page cache where the kernel lets root do so)
   and warm (best and median of --repeat); beside it the floor docker itself costs
   (`--entrypoint /bin/true`) and the entrypoint's own time inside a running container.
   Target: a cold `--help` under 0.5 s.

    python bench/bench_image.py [--image TAG | --build] [--repeat 5]

--build builds the Dockerfile as the runner does (no build arguments) and tags it
evalcheck-action:bench; without it, --image names an image already built (default: that tag).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MB = 400
MAX_HELP_S = 0.5
PARTS = ["/opt/evalcheck", "/opt/agent", "/usr/lib/python3.11", "/usr/lib/git-core",
         "/usr/lib/x86_64-linux-gnu", "/usr/share", "/usr/bin", "/var"]


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


def mb(size: float) -> str:
    return f"{size / 1e6:.1f} MB"


def drop_caches() -> bool:
    """Drop the page cache (root, and a kernel that lets a container or VM do it)."""
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def timed(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", *args], capture_output=True, check=False)
    return time.perf_counter() - start


def report_size(image: str) -> float:
    size = json.loads(docker("image", "inspect", "-f", "{{json .Size}}", image).stdout)
    print(f"image {image}: {mb(size)} (target <= {MAX_MB} MB)")
    print("layers (docker history):")
    for line in docker("history", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}", image).stdout.splitlines():
        created, _, by = line.partition("\t")[2], None, line.partition("\t")[0]
        print(f"  {by:>8}  {' '.join(created.split())[:110]}")
    site = "/opt/evalcheck/lib/python3.11/site-packages"
    script = (f"du -sk {' '.join(PARTS)} 2>/dev/null; echo --; cd {site} && du -sk * | sort -rn | head -15")
    out = docker("run", "--rm", "--entrypoint", "sh", image, "-c", script, check=False).stdout
    parts, _, top = out.partition("--\n")
    print("parts (du, MB):")
    for line in parts.splitlines():
        kb, path = line.split("\t")
        print(f"  {int(kb) / 1024:8.1f}  {path}")
    print(f"biggest in {site} (MB):")
    for line in top.splitlines():
        kb, path = line.split("\t")
        print(f"  {int(kb) / 1024:8.1f}  {path}")
    return size / 1e6


def report_start(image: str, repeat: int, first: float | None) -> float:
    if first is not None:
        print(f"--help, first run after the build: {first:.3f} s")
    dropped = drop_caches()
    cold = []
    if dropped:
        cold_floor = []
        for _ in range(repeat):
            drop_caches()
            cold.append(timed(image, "--help"))
            drop_caches()
            cold_floor.append(timed("--entrypoint", "/bin/true", image))
        print(f"--help, page cache dropped before each: best {min(cold):.3f} s, "
              f"median {statistics.median(cold):.3f} s")
        print(f"docker's own floor, page cache dropped (--entrypoint /bin/true): best "
              f"{min(cold_floor):.3f} s, median {statistics.median(cold_floor):.3f} s")
    else:
        print("--help, page cache: cannot drop it here (/proc/sys/vm/drop_caches is read-only); "
              "cold = the first run after --build")
    warm = [timed(image, "--help") for _ in range(repeat)]
    floor = [timed("--entrypoint", "/bin/true", image) for _ in range(repeat)]
    print(f"--help, warm: best {min(warm):.3f} s, median {statistics.median(warm):.3f} s")
    print(f"docker's own floor (--entrypoint /bin/true): best {min(floor):.3f} s, "
          f"median {statistics.median(floor):.3f} s")
    probe = ("import subprocess, time\nts = []\nfor _ in range(5):\n    t = time.perf_counter()\n"
             "    subprocess.run(['/entrypoint', '--help'], capture_output=True)\n"
             "    ts.append(time.perf_counter() - t)\nprint(min(ts), sorted(ts)[2])\n")
    inside = docker("run", "--rm", "--entrypoint", "/opt/evalcheck/bin/python", image, "-c", probe,
                    check=False).stdout.split()
    if len(inside) == 2:
        print(f"the entrypoint's --help inside the container: best {float(inside[0]) * 1000:.0f} ms, "
              f"median {float(inside[1]) * 1000:.0f} ms")
    if cold:
        return statistics.median(cold)
    return first if first is not None else statistics.median(warm)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default="evalcheck-action:bench")
    parser.add_argument("--build", action="store_true", help="build the Dockerfile first")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    first = None
    if args.build:
        start = time.perf_counter()
        done = docker("build", "-q", "-t", args.image, str(ROOT), check=False)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        print(f"built {args.image} in {time.perf_counter() - start:.0f} s")
        first = timed(args.image, "--help")
    size = report_size(args.image)
    help_s = report_start(args.image, args.repeat, first)
    print(f"size {size:.0f} MB: {'OK' if size <= MAX_MB else 'OVER'} (target {MAX_MB} MB); "
          f"cold --help (median) {help_s:.3f} s: {'OK' if help_s < MAX_HELP_S else 'OVER'} (target {MAX_HELP_S} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
