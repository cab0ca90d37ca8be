# Target of test_pystack: distinctive nested functions, a pure-Python hot
# loop, a builtin calling back into Python and numpy's native matmul.
# Line numbers are asserted by the test: edit with care.
import sys


def inner_busy(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def middle(n):
    return inner_busy(n)


def outer(n):
    return middle(n)


def sorter(n):
    data = [(i * 7919) % 100003 for i in range(n)]
    for _ in range(3):
        sorted(data, key=lambda x: -((x * 31 + 7) % 1009 * (x % 13) + (x >> 3) % 101))
    return data[0]


def matmul_caller(n):
    import numpy as np
    a = np.ones((n, n))
    for _ in range(12):
        a = np.dot(a, a) / n
    return float(a[0, 0])


if __name__ == "__main__":
    outer(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
    sorter(400_000)
    matmul_caller(400)
    print("done")
