class C:
    @staticmethod
    @other(
        1)
    def f(a, b):
        """Doc."""
        x = compute(a,
                    b)  # trailing
        if a: return x
        if b: y = 1; z = 2
        else: raise KeyError(
            'no')
        return y + z


def loops(xs):
    total = 0
    for x in xs:
        if x < 0:
            continue
        if x > 100:
            break
        total += x
    else:
        total = -1
    while total:
        total -= 1
    return total


def handlers(s):
    try:
        v = int(s)
    except ValueError:
        v = -1
    except* TypeError:
        v = -2
    else:
        v += 1
    finally:
        done = True
    with open(s) as f, open(s) as g:
        data = f.read()
    match data:
        case 'go' if v:
            r = 1
        case [a, *rest]:
            r = lambda q: q
        case _:
            r = 0
    async def inner():
        async for i in aiter():
            await i
        async with ctx():
            yield
    return r
