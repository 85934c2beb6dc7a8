// cxx_exceptions: C++ throw/catch across frames, an exception class hierarchy, destructors run
// during unwinding, rethrow, nested try, catch(...), exception_ptr, library-thrown exceptions, STL.
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<std::string> log_lines;

struct Tracer {
    std::string name;
    explicit Tracer(std::string n) : name(std::move(n)) { log_lines.push_back("ctor " + name); }
    ~Tracer() { log_lines.push_back("dtor " + name); }
};

struct BaseError : std::runtime_error {
    int code;
    BaseError(const std::string &what, int c) : std::runtime_error(what), code(c) {}
};
struct IoError : BaseError {
    std::string path;
    IoError(const std::string &p, int c) : BaseError("io error on " + p, c), path(p) {}
};
struct ParseError : BaseError {
    int line;
    ParseError(int l) : BaseError("parse error at line " + std::to_string(l), 100 + l), line(l) {}
};

__attribute__((noinline)) void level3(int kind)
{
    Tracer t("level3");
    switch (kind) {
    case 0: throw IoError("/etc/missing", 2);
    case 1: throw ParseError(17);
    case 2: throw std::out_of_range("index 99");
    case 3: throw 42;
    case 4: throw std::string("a thrown string");
    default: break;
    }
}

__attribute__((noinline)) int level2(int kind)
{
    Tracer t("level2");
    std::vector<std::unique_ptr<Tracer>> owned;
    owned.push_back(std::make_unique<Tracer>("heap-a"));
    owned.push_back(std::make_unique<Tracer>("heap-b"));
    level3(kind);
    return kind * 10;
}

__attribute__((noinline)) std::string level1(int kind)
{
    Tracer t("level1");
    try {
        return "returned " + std::to_string(level2(kind));
    } catch (const ParseError &e) {
        return std::string("caught ParseError line=") + std::to_string(e.line) +
               " code=" + std::to_string(e.code);
    } catch (const BaseError &e) {
        log_lines.push_back(std::string("level1 saw ") + e.what() + ", rethrowing");
        throw;
    }
}

std::string run(int kind)
{
    try {
        return level1(kind);
    } catch (const IoError &e) {
        return std::string("caught IoError: ") + e.what() + " path=" + e.path;
    } catch (const std::exception &e) {
        return std::string("caught std::exception: ") + e.what();
    } catch (int v) {
        return "caught int " + std::to_string(v);
    } catch (...) {
        return "caught (...)";
    }
}

// A try nested inside a catch handler, and a new exception thrown from the handler.
std::string nested()
{
    std::string out;
    try {
        try {
            throw std::logic_error("inner");
        } catch (const std::logic_error &e) {
            out += std::string("inner caught ") + e.what() + "; ";
            try {
                throw std::runtime_error("from handler");
            } catch (const std::runtime_error &e2) {
                out += std::string("handler caught ") + e2.what() + "; ";
            }
            throw std::invalid_argument("replacement");
        }
    } catch (const std::invalid_argument &e) {
        out += std::string("outer caught ") + e.what();
    }
    return out;
}

// std::exception_ptr: capture and rethrow later.
std::string exception_ptr_test()
{
    std::exception_ptr p;
    try {
        throw ParseError(3);
    } catch (...) {
        p = std::current_exception();
    }
    try {
        std::rethrow_exception(p);
    } catch (const BaseError &e) {
        return std::string("rethrown exception_ptr: ") + e.what();
    }
    return "not caught";
}

// Exceptions thrown by the standard library itself.
std::string library_throws()
{
    std::string out;
    std::vector<int> v(3);
    try {
        v.at(10) = 1;
    } catch (const std::out_of_range &) {
        out += "vector::at threw; ";
    }
    std::map<std::string, int> m{{"one", 1}};
    try {
        (void)m.at("two");
    } catch (const std::out_of_range &) {
        out += "map::at threw; ";
    }
    try {
        (void)std::stoi("not a number");
    } catch (const std::invalid_argument &) {
        out += "stoi threw";
    }
    return out;
}

} // namespace

int main()
{
    for (int kind = 0; kind <= 5; kind++) {
        log_lines.clear();
        std::string r = run(kind);
        std::printf("kind %d: %s\n", kind, r.c_str());
        for (const auto &l : log_lines)
            std::printf("    %s\n", l.c_str());
    }
    std::printf("%s\n", nested().c_str());
    std::printf("%s\n", exception_ptr_test().c_str());
    std::printf("%s\n", library_throws().c_str());

    // Many throws in a loop: unwinder caches and a running total.
    long total = 0;
    for (int i = 0; i < 2000; i++) {
        try {
            if (i % 3 == 0)
                throw ParseError(i);
            total += i;
        } catch (const BaseError &e) {
            total += e.code;
        }
    }
    std::printf("loop total: %ld\n", total);

    std::map<std::string, std::vector<int>> groups;
    for (int i = 0; i < 100; i++)
        groups["g" + std::to_string(i % 7)].push_back(i * i);
    unsigned long h = 0;
    for (const auto &kv : groups)
        for (int x : kv.second)
            h = h * 131 + static_cast<unsigned long>(x) + kv.first.size();
    std::printf("map of vectors: groups=%zu hash=%lu\n", groups.size(), h);
    return 0;
}
