"""How far is ``attend`` with ``scaled_dot_score`` from PyTorch's fused attention on the CPU?

    python benchmarks/attend_vs_sdpa.py [--threads N] [--queries Tq] [--min-run-time S]

Times ``attnlab.attention.attend(q, k, v, score=scaled_dot_score)`` against
``torch.nn.functional.scaled_dot_product_attention(q, k, v)`` for batch 32, d = 64 and 64 to 1024 keys
(as many queries as keys unless ``--queries`` is given), with ``torch.utils.benchmark``, and prints the
times and their ratio. Each time is the fastest of the timed blocks: other programs can only slow a block
down, so on a shared machine the fastest block is the best estimate of the cost itself. Not a test: the
numbers depend on the machine.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch.utils import benchmark

from attnlab.attention import attend, scaled_dot_score

BATCH, DIM = 32, 64
KEYS = (64, 128, 256, 512, 1024)


def best_ms(stmt: str, env: dict, min_run_time: float) -> float:
    """Milliseconds per run of ``stmt``, fastest block (``torch.utils.benchmark`` picks the block size)."""
    timer = benchmark.Timer(stmt=stmt, globals=env, num_threads=torch.get_num_threads())
    return min(timer.blocked_autorange(min_run_time=min_run_time).times) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads")
    parser.add_argument("--queries", type=int, default=None, help="queries per sequence (default: = keys)")
    parser.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timing per measurement")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {BATCH}, d {DIM}")
    print(f"{'keys':>6} {'queries':>8} {'attend ms':>10} {'sdpa ms':>10} {'ratio':>7} {'max |diff|':>11}")
    for n_keys in KEYS:
        n_queries = args.queries or n_keys
        q = torch.randn(BATCH, n_queries, DIM, generator=gen)
        k = torch.randn(BATCH, n_keys, DIM, generator=gen)
        v = torch.randn(BATCH, n_keys, DIM, generator=gen)
        env = {"attend": attend, "score": scaled_dot_score, "sdpa": F.scaled_dot_product_attention,
               "q": q, "k": k, "v": v}
        with torch.inference_mode():
            ours_out = attend(q, k, v, score=scaled_dot_score)[0]
            diff = (ours_out - F.scaled_dot_product_attention(q, k, v)).abs().max().item()
            ours = best_ms("attend(q, k, v, score=score)", env, args.min_run_time)
            fused = best_ms("sdpa(q, k, v)", env, args.min_run_time)
        print(f"{n_keys:>6} {n_queries:>8} {ours:>10.3f} {fused:>10.3f} {ours / fused:>7.2f} {diff:>11.2e}")


if __name__ == "__main__":
    main()
