// Replaces the global operator new and delete to count allocations: included by exactly one
// translation unit of a program (a replacement may be defined once), the successor allocation
// test and benchmark. Counting is off until a caller turns it on; the callers are
// single-threaded while they count.
#pragma once

#include <cstdlib>
#include <new>

namespace counting_new {
inline bool counting = false;
inline unsigned long long calls = 0;  // of operator new while `counting`
}  // namespace counting_new

// The replacements pair malloc with free themselves; GCC, seeing `operator delete` free what
// `operator new` returned, would warn of a mismatch that is not one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
  if (counting_new::counting) ++counting_new::calls;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
