// cxx_thread: std::thread workers pulling jobs from a queue guarded by std::mutex and
// std::condition_variable, std::atomic counters, thread_local objects with constructors and
// destructors, std::async/std::future, std::call_once, and an exception carried across threads
// through std::promise. Prints results that do not depend on the interleaving.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::mutex m;
std::condition_variable cv;
std::deque<int> jobs;
bool closed = false;
std::vector<long> results;
std::atomic<long> processed{0};
std::atomic<int> tl_constructed{0}, tl_destroyed{0};

struct PerThread {
    long local_sum = 0;
    PerThread() { tl_constructed++; }
    ~PerThread() { tl_destroyed++; }
};
thread_local PerThread per_thread;

long work(int n)
{
    long x = n;
    for (int i = 0; i < 2000; i++)
        x = (x * 1103515245 + 12345) % 2147483648L;
    return x % 1000;
}

void worker()
{
    per_thread.local_sum = 0; // constructs this thread's object even if it never gets a job
    for (;;) {
        int job;
        {
            std::unique_lock<std::mutex> lk(m);
            cv.wait(lk, [] { return !jobs.empty() || closed; });
            if (jobs.empty())
                return;
            job = jobs.front();
            jobs.pop_front();
        }
        long r = work(job);
        per_thread.local_sum += r;
        processed.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard<std::mutex> g(m);
        results.push_back(job * 1000 + r);
    }
}

std::once_flag once;
std::atomic<int> once_calls{0};

} // namespace

int main()
{
    std::vector<std::thread> pool;
    for (int i = 0; i < 4; i++)
        pool.emplace_back(worker);
    for (int j = 0; j < 2000; j++) {
        {
            std::lock_guard<std::mutex> g(m);
            jobs.push_back(j);
        }
        cv.notify_one();
    }
    {
        std::lock_guard<std::mutex> g(m);
        closed = true;
    }
    cv.notify_all();
    for (auto &t : pool)
        t.join();
    std::sort(results.begin(), results.end());
    long sum = std::accumulate(results.begin(), results.end(), 0L);
    std::printf("jobs done: %ld results: %zu sum: %ld first: %ld last: %ld\n", processed.load(),
                results.size(), sum, results.front(), results.back());
    std::printf("thread_local: %d constructed, %d destroyed in finished threads\n",
                tl_constructed.load(), tl_destroyed.load());

    std::vector<std::future<long>> fs;
    for (int i = 0; i < 6; i++)
        fs.push_back(std::async(std::launch::async, [i] {
            std::call_once(once, [] { once_calls++; });
            return work(i * 7) + i;
        }));
    long fsum = 0;
    for (auto &f : fs)
        fsum += f.get();
    std::printf("async sum: %ld, call_once ran %d time(s)\n", fsum, once_calls.load());

    std::promise<int> p;
    std::future<int> f = p.get_future();
    std::thread thrower([&p] {
        try {
            throw std::runtime_error("from a thread");
        } catch (...) {
            p.set_exception(std::current_exception());
        }
    });
    try {
        f.get();
        std::printf("no exception?\n");
    } catch (const std::exception &e) {
        std::printf("caught across threads: %s\n", e.what());
    }
    thrower.join();

    std::atomic<long> counter{0};
    std::vector<std::thread> incs;
    for (int i = 0; i < 4; i++)
        incs.emplace_back([&counter] {
            for (int k = 0; k < 50000; k++)
                counter.fetch_add(1);
        });
    for (auto &t : incs)
        t.join();
    std::printf("atomic counter: %ld\n", counter.load());
    std::printf("hardware_concurrency > 0: %s\n",
                std::thread::hardware_concurrency() > 0 ? "yes" : "no");
    return 0;
}
