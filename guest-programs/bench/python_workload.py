"""python_workload: pure-Python benchmark for /usr/bin/python3 (dicts, strings, a small class
hierarchy, list comprehensions, generators, sorting); prints one checksum line. Deterministic:
no set/dict iteration order depends on string hashing (sorted where it matters)."""

MASK = (1 << 64) - 1


def lcg(seed):
    while True:
        seed = (seed * 6364136223846793005 + 1442695040888963407) & MASK
        yield seed >> 33


class Shape:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def area(self):
        raise NotImplementedError

    def describe(self):
        return f"{self.name}:{self.area():.3f}"


class Rect(Shape):
    __slots__ = ("w", "h")

    def __init__(self, w, h):
        super().__init__("rect")
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


class Square(Rect):
    __slots__ = ()

    def __init__(self, s):
        super().__init__(s, s)
        self.name = "square"


class Circle(Shape):
    __slots__ = ("r",)

    def __init__(self, r):
        super().__init__("circle")
        self.r = r

    def area(self):
        return 3.141592653589793 * self.r * self.r


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu").split()


def text_work(rng, rounds):
    check = 0
    counts = {}
    for _ in range(rounds):
        sentence = " ".join(WORDS[next(rng) % len(WORDS)] for _ in range(40))
        upper = sentence.upper()
        parts = upper.split(" ")
        for w in parts:
            counts[w] = counts.get(w, 0) + 1
        joined = "-".join(reversed(parts)).replace("A", "4").lower()
        check = (check * 31 + len(joined) + joined.count("4") + joined.find("zulu")) & MASK
        check = (check + sum(ord(c) for c in sentence[:20])) & MASK
    for w in sorted(counts):
        check = (check * 131 + counts[w] + len(w)) & MASK
    return check


def dict_work(rng, n):
    d = {}
    for i in range(n):
        k = next(rng) % (n // 2)
        d[k] = d.get(k, 0) + i
    for k in list(d)[: n // 4]:
        del d[k]
    total = sum(v % 1000 for v in d.values())
    keyed = {f"key{k}": v for k, v in d.items() if v % 3 == 0}
    return (total * 7 + len(d) + len(keyed)) & MASK


def shape_work(rng, n):
    shapes = []
    for _ in range(n):
        r = next(rng)
        kind = r % 3
        if kind == 0:
            shapes.append(Rect(r % 17 + 1, r % 13 + 1))
        elif kind == 1:
            shapes.append(Square(r % 11 + 1))
        else:
            shapes.append(Circle((r % 7 + 1) / 2))
    shapes.sort(key=lambda s: (s.area(), s.name))
    total = sum(s.area() for s in shapes)
    descs = [s.describe() for s in shapes[:: max(1, n // 50)]]
    by_kind = {}
    for s in shapes:
        by_kind.setdefault(type(s).__name__, []).append(s)
    check = int(total * 1000) & MASK
    for name in sorted(by_kind):
        check = (check * 37 + len(by_kind[name])) & MASK
    for d in descs:
        check = (check * 31 + len(d) + ord(d[0])) & MASK
    return check


def comprehension_work(n):
    squares = [i * i for i in range(n)]
    evens = [x for x in squares if x % 2 == 0]
    pairs = {i: [j for j in range(i % 10)] for i in range(n // 10)}
    matrix = [[(i * j) % 7 for j in range(60)] for i in range(60)]
    transposed = [list(row) for row in zip(*matrix)]
    flat = sum(sum(row) for row in transposed)
    gen_total = sum(x % 97 for x in (y * 3 for y in range(n)))
    return (sum(evens) + sum(len(v) for v in pairs.values()) + flat + gen_total) & MASK


def exceptions_work(n):
    caught = 0
    for i in range(n):
        try:
            if i % 5 == 0:
                raise ValueError(i)
            if i % 7 == 0:
                {}[i]
        except ValueError as e:
            caught += e.args[0] % 3
        except KeyError:
            caught += 1
    return caught


def main():
    rng = lcg(12345)
    check = 0
    for _ in range(15):
        check = (check * 1000003 + text_work(rng, 3000)) & MASK
        check = (check * 1000003 + dict_work(rng, 60000)) & MASK
        check = (check * 1000003 + shape_work(rng, 20000)) & MASK
        check = (check * 1000003 + comprehension_work(60000)) & MASK
        check = (check * 1000003 + exceptions_work(30000)) & MASK
    print(f"python_workload: checksum={check:016x}")


if __name__ == "__main__":
    main()
