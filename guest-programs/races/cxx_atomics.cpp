// Race-free C++: data handed from one thread to another through std::atomic release stores and
// acquire loads (plain movs on x86-64), with the atomic a global, a member of a global, a heap
// object and a local of main's frame. Nothing else orders the payloads' accesses.
#include <atomic>
#include <cstdio>
#include <thread>
static int payload[4];
static std::atomic<bool> ready{false};
struct Box {
    std::atomic<int> flag{0};
    int data = 0;
};
static Box box;
int main() {
    std::atomic<bool>* heap = new std::atomic<bool>(false);
    std::atomic<int> local{0};
    std::thread t([heap, &local] {
        payload[0] = 1;
        ready.store(true, std::memory_order_release);
        payload[1] = 2;
        box.flag.store(1, std::memory_order_release);
        payload[2] = 3;
        heap->store(true, std::memory_order_release);
        payload[3] = 4;
        local.store(1, std::memory_order_release);
    });
    while (!ready.load(std::memory_order_acquire)) {
    }
    while (!box.flag.load(std::memory_order_acquire)) {
    }
    while (!heap->load(std::memory_order_acquire)) {
    }
    while (!local.load(std::memory_order_acquire)) {
    }
    std::printf("%d %d %d %d\n", payload[0], payload[1], payload[2], payload[3]);
    t.join();
    delete heap;
    return 0;
}
