# Pure-Python CPU load for bench/agent/pystack.sh: a hot loop DEPTH Python
# frames deep (every frame is walked at each sample).
import sys


def level(d, n):
    if d:
        return level(d - 1, n)
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3_000_000
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    level(depth, n)
