#!/usr/bin/env python3
"""compare_checkpoints.py A B — whether two foxhunt checkpoints hold the same tensors bit
for bit (metadata such as the run directory's path may differ). Exit 0 when every tensor
of A is in B with the same dtype, shape and bytes and B has no others; 1 otherwise,
naming the first difference. Used by scripts/gpu-check.sh (determinism and resume on
the GPU)."""
import sys

from safetensors.numpy import load_file


def main() -> int:
    a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
    if set(a) != set(b):
        print(f"different tensors: only in A {sorted(set(a) - set(b))}, only in B {sorted(set(b) - set(a))}")
        return 1
    for k in sorted(a):
        if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or a[k].tobytes() != b[k].tobytes():
            print(f"{k} differs")
            return 1
    print(f"{len(a)} tensors identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
