# 5 M pure-Python calls: the cost the Python layer adds to ordinary code
# (it hooks no calls, so this should stay at the agent's own cost).
def f(x):
    return x + 1


def main(n=5_000_000):
    s = 0
    for i in range(n):
        s = f(s)
    return s


print(main())
