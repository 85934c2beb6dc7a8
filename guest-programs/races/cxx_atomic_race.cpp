// A race beside C++ atomics: the handed-over payload is ordered by a heap std::atomic's
// release and acquire (no race), but the second worker's write to it is not ordered with main's
// read.
#include <atomic>
#include <cstdio>
#include <thread>
static int payload;
int main() {
    std::atomic<bool>* ready = new std::atomic<bool>(false);
    std::thread t([ready] {
        payload = 42;
        ready->store(true, std::memory_order_release);
    });
    while (!ready->load(std::memory_order_acquire)) {
    }
    std::printf("%d\n", payload);
    t.join();
    std::thread u([] { payload = 5; /* racing write */ });
    std::printf("%d\n", payload); /* racing read */
    u.join();
    delete ready;
    return 0;
}
