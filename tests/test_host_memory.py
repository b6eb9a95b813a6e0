"""keep_freed_memory: a large block freed and allocated again is not page-faulted in again.

Measured by minor page faults (not time), in fresh interpreters: the setting is
process-wide and cannot be undone. The probe imports what ``python -m roformer_lit`` has
imported when it applies the setting (``roformer_lit.commands``): with torch 2.14's CUDA
build and nothing else imported yet, glibc served the block by mmap regardless.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc malloc behaviour, Linux only"
)

PROBE = """
import json, resource, sys, torch
import roformer_lit.commands  # what python -m roformer_lit has imported when it applies it
from roformer_lit.training.host_memory import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else False

def faults_of_one_step():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = torch.empty(64 * 2**20, dtype=torch.uint8)  # 64 MiB: above any mmap threshold
    block.fill_(1)
    del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults_of_one_step()  # the first step faults in any case
print(json.dumps({"applied": applied, "faults": min(faults_of_one_step() for _ in range(3))}))
"""


def probe(mode: str, **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_freed_blocks_are_reused_without_page_faults():
    system = probe("system")
    kept = probe("keep")
    if not kept["applied"]:
        pytest.skip("not glibc")
    pages = 64 * 2**20 // os.sysconf("SC_PAGE_SIZE")
    assert system["faults"] > pages // 2  # glibc maps and unmaps the block every time
    assert kept["faults"] < pages // 20  # kept: the second allocation reuses the pages


def test_the_opt_out_leaves_malloc_alone():
    assert probe("keep", ROFORMER_LIT_SYSTEM_MALLOC="1")["applied"] is False
