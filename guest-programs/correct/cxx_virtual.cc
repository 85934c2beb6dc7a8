// cxx_virtual: virtual calls (single and multiple inheritance, virtual bases), std::function,
// lambdas with captures, templates, RTTI (dynamic_cast/typeid), and static initialization.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <typeinfo>
#include <vector>

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual std::string name() const { return "shape"; }
    virtual int sides() const { return 0; }
};

struct Rect : Shape {
    double w, h;
    Rect(double w_, double h_) : w(w_), h(h_) {}
    double area() const override { return w * h; }
    std::string name() const override { return "rect"; }
    int sides() const override { return 4; }
};

struct Square final : Rect {
    explicit Square(double s) : Rect(s, s) {}
    std::string name() const override { return "square"; }
};

struct Circle : Shape {
    double r;
    explicit Circle(double r_) : r(r_) {}
    double area() const override { return 3.14159265358979 * r * r; }
    std::string name() const override { return "circle"; }
};

struct Triangle : Shape {
    double b, h;
    Triangle(double b_, double h_) : b(b_), h(h_) {}
    double area() const override { return 0.5 * b * h; }
    int sides() const override { return 3; }
};

// Multiple and virtual inheritance: calls through different base pointers need this-adjustment.
struct Named {
    virtual ~Named() = default;
    virtual std::string label() const { return "named"; }
};
struct Counted {
    virtual ~Counted() = default;
    virtual int count() const { return 1; }
};
struct Widget : Named, Counted {
    int n;
    explicit Widget(int n_) : n(n_) {}
    std::string label() const override { return "widget#" + std::to_string(n); }
    int count() const override { return n * 2; }
};

struct Animal {
    virtual ~Animal() = default;
    virtual std::string sound() const = 0;
    int legs = 4;
};
struct Pet : virtual Animal {
    std::string sound() const override { return "pet-noise"; }
};
struct Working : virtual Animal {
    std::string sound() const override { return "work-noise"; }
};
struct Dog : Pet, Working {
    std::string sound() const override { return "woof"; }
};

template <typename T, int N>
struct RingBuffer {
    T data[N] = {};
    int head = 0;
    void push(T v) { data[head++ % N] = v; }
    T sum() const { return std::accumulate(data, data + N, T{}); }
};

template <typename F, typename... Args>
auto call_all(F f, Args... args) { return (f(args) + ...); }

template <typename T>
T power(T base, unsigned e) { return e == 0 ? T(1) : base * power(base, e - 1); }

static int counter_init()
{
    static int calls = 0;
    return ++calls;
}
static const int global_init = counter_init() * 100;

int main()
{
    std::vector<std::unique_ptr<Shape>> shapes;
    for (int i = 1; i <= 12; i++) {
        switch (i % 4) {
        case 0: shapes.push_back(std::make_unique<Rect>(i, i + 1)); break;
        case 1: shapes.push_back(std::make_unique<Square>(i)); break;
        case 2: shapes.push_back(std::make_unique<Circle>(i * 0.5)); break;
        default: shapes.push_back(std::make_unique<Triangle>(i, 2)); break;
        }
    }
    double total = 0;
    std::map<std::string, int> by_name;
    int rects = 0, sides = 0;
    for (const auto &s : shapes) {
        total += s->area();
        by_name[s->name()]++;
        sides += s->sides();
        if (dynamic_cast<const Rect *>(s.get()))
            rects++;
    }
    std::printf("total area %.6f, sides %d, rect-like %d\n", total, sides, rects);
    for (const auto &kv : by_name)
        std::printf("  %s: %d\n", kv.first.c_str(), kv.second);
    std::printf("typeid of shapes[0]: %s\n", typeid(*shapes[0]).name());

    // Sort by area through a virtual call in the comparator.
    std::sort(shapes.begin(), shapes.end(),
              [](const auto &a, const auto &b) { return a->area() < b->area(); });
    std::printf("smallest %s %.4f, largest %s %.4f\n", shapes.front()->name().c_str(),
                shapes.front()->area(), shapes.back()->name().c_str(), shapes.back()->area());

    Widget w(21);
    Named *np = &w;
    Counted *cp = &w;
    std::printf("multiple inheritance: %s %d, cross-cast ok=%d\n", np->label().c_str(),
                cp->count(), dynamic_cast<Counted *>(np) == cp);

    Dog d;
    Pet *pp = &d;
    Working *wp = &d;
    Animal *ap = &d;
    std::printf("virtual base: %s %s %s legs=%d\n", pp->sound().c_str(), wp->sound().c_str(),
                ap->sound().c_str(), ap->legs);

    // std::function and lambdas with captures by value and by reference.
    int base = 7;
    std::vector<std::function<long(long)>> ops = {
        [](long x) { return x + 1; },
        [base](long x) { return x * base; },
        [&base](long x) { return x - base; },
        [](long x) { return x ^ 0x55; },
        std::bind(std::multiplies<long>(), std::placeholders::_1, 3),
    };
    long v = 1;
    for (int round = 0; round < 1000; round++) {
        v = ops[static_cast<size_t>(round) % ops.size()](v) % 1000003;
        if (round == 500)
            base = 11; // visible to the by-reference lambda only
    }
    std::printf("std::function chain: %ld\n", v);

    auto make_counter = [] {
        int c = 0;
        return [c]() mutable { return ++c; };
    };
    auto c1 = make_counter(), c2 = make_counter();
    c1();
    c1();
    std::printf("mutable lambdas: %d %d\n", c1(), c2());

    RingBuffer<int, 8> rb;
    for (int i = 0; i < 20; i++)
        rb.push(i * i);
    RingBuffer<double, 3> rd;
    rd.push(1.5);
    rd.push(2.25);
    std::printf("templates: ring sum %d, ring<double> %.2f, fold %d, power %ld %.3f\n", rb.sum(),
                rd.sum(), call_all([](int x) { return x * x; }, 1, 2, 3, 4), power(3L, 20),
                power(1.5, 7));

    std::vector<std::string> words = {"delta", "alpha", "charlie", "bravo", "echo"};
    std::sort(words.begin(), words.end());
    std::string joined = std::accumulate(std::next(words.begin()), words.end(), words[0],
                                         [](std::string a, const std::string &b) {
                                             return std::move(a) + "," + b;
                                         });
    std::printf("sorted words: %s\n", joined.c_str());
    std::printf("static init: %d\n", global_init);
    return 0;
}
