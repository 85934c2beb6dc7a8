// Race-free C++: std::thread, std::mutex with lock_guard, std::atomic read-modify-writes, and
// results read after join.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>
static std::mutex m;
static long total;
static std::atomic<long> ops{0};
int main() {
    std::vector<long> partial(4);
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([t, &partial] {
            for (int i = 0; i < 500; i++) {
                std::lock_guard<std::mutex> g(m);
                total += i;
                ops.fetch_add(1);
            }
            partial[t] = t * 10;
        });
    for (auto &t : ts)
        t.join();
    long sum = 0;
    for (long p : partial)
        sum += p;
    std::printf("%ld %ld %ld\n", total, ops.load(), sum);
    return 0;
}
