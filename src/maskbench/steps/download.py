"""Entry point: download one URL to a file and print its sha256 (the gender corpus on the login node).

    python -m maskbench.steps download --url http://data.statmt.org/.../news-commentary-v15.en.gz --out FILE
"""

from __future__ import annotations

import argparse
from pathlib import Path

from maskbench.hub import download_url
from maskbench.steps import run_step


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.steps download", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="http(s) or file URL")
    parser.add_argument("--out", required=True, type=Path, help="the file to write")
    args = parser.parse_args(argv)
    sha = download_url(args.url, args.out)
    print(f"{args.out}: sha256 {sha} ({args.out.stat().st_size} bytes) from {args.url}")
    return 0


if __name__ == "__main__":
    run_step(main)
