# Target of test_pystack: distinctive nested functions, a pure-Python hot
# loop, a builtin calling back into Python and numpy's native code.
# Line numbers are asserted by the test: edit with care.
import sys, time


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


def matmul_caller(n, end):
    import numpy as np
    a = np.ones((n, n))
    while time.thread_time() < end:
        a = np.dot(a, a) / n
    return float(a[0, 0])


def run_for(seconds, fn, n):
    # Each part runs until this thread has used `seconds` of CPU time, not a
    # fixed amount of work: the sampler fires per tick of CPU time, so a part
    # gets ~seconds x 250 samples however loaded the machine is (its wall
    # time grows instead). Under load a fixed amount of work got a few
    # samples in numpy's own code, or none.
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        fn(n)


if __name__ == "__main__":
    cpu = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4
    run_for(cpu, outer, 100_000)
    run_for(cpu, sorter, 20_000)
    # n=16: most of each call is numpy's own code (dispatch, the division's
    # loop), which unwinds to the Python line; OpenBLAS's kernel does not.
    # 2.5x the time: about a third of its samples land there
    matmul_caller(16, time.thread_time() + 2.5 * cpu)
    print("done")
