// C++: an exception is thrown and caught (the unwinder leaves frames without returning), then
// a name is copied without a bound over the label pointer that is used next.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
struct Record { char name[8]; const char *label; };
static void parse(Record &r, const char *s) {
    if (!s[0]) throw std::runtime_error("empty");
    for (size_t i = 0; s[i]; i++)
        r.name[i] = s[i]; /* root: no bound */
}
int main(int argc, char **argv) {
    Record r{"", "ok"};
    try { parse(r, ""); } catch (const std::exception &e) { std::printf("caught %s\n", e.what()); }
    parse(r, argc > 1 ? argv[1] : "short");
    std::printf("%s %zu\n", r.label, std::strlen(r.label));
    return 0;
}
