"""Entry point: download one URL to a file and print its sha256 (the gender corpus on the login node).

    python -m maskbench.steps download --url http://data.statmt.org/.../news-commentary-v15.en.gz --out FILE
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from maskbench.hub import download_url
from maskbench.steps import run_step, step_main


@dataclass
class DownloadArgs:
    url: str = field(metadata={"help": "http(s) or file URL"})
    out: Path = field(metadata={"help": "the file to write"})


@step_main(DownloadArgs)
def main(args: DownloadArgs) -> int:
    sha = download_url(args.url, args.out)
    print(f"{args.out}: sha256 {sha} ({args.out.stat().st_size} bytes) from {args.url}")
    return 0


if __name__ == "__main__":
    run_step(main)
