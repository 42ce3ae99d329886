// A storage policy for tests whose lists count every element they hand out (operator[], front,
// back, and each dereference of an iterator), so that a test can bound the work of code written
// over `S::template List<T, Tag>` without timing it: a scan of N entries reads N of them.
// It is a growable storage (kFlat is false: the code under test takes its growable paths).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

namespace fp8sm::test_support {

// Elements read through counting lists, since the last reset.
inline std::uint64_t element_visits = 0;

template <class T>
T& visit(T& element) {
  ++element_visits;
  return element;
}

template <class T>
class CountingIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = std::remove_const_t<T>;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using reference = T&;

  CountingIterator() = default;
  explicit CountingIterator(T* at) : at_(at) {}
  operator CountingIterator<const T>() const { return CountingIterator<const T>(at_); }  // NOLINT: as std's iterators
  T* base() const { return at_; }

  T& operator*() const { return visit(*at_); }
  T* operator->() const { return &visit(*at_); }
  T& operator[](difference_type n) const { return visit(at_[n]); }
  CountingIterator& operator++() { return ++at_, *this; }
  CountingIterator& operator--() { return --at_, *this; }
  CountingIterator operator++(int) { return CountingIterator(at_++); }
  CountingIterator operator--(int) { return CountingIterator(at_--); }
  CountingIterator& operator+=(difference_type n) { return at_ += n, *this; }
  CountingIterator& operator-=(difference_type n) { return at_ -= n, *this; }
  friend CountingIterator operator+(CountingIterator i, difference_type n) { return i += n; }
  friend CountingIterator operator+(difference_type n, CountingIterator i) { return i += n; }
  friend CountingIterator operator-(CountingIterator i, difference_type n) { return i -= n; }
  friend difference_type operator-(CountingIterator a, CountingIterator b) { return a.at_ - b.at_; }
  friend bool operator==(CountingIterator a, CountingIterator b) { return a.at_ == b.at_; }
  friend bool operator!=(CountingIterator a, CountingIterator b) { return a.at_ != b.at_; }
  friend bool operator<(CountingIterator a, CountingIterator b) { return a.at_ < b.at_; }
  friend bool operator>(CountingIterator a, CountingIterator b) { return a.at_ > b.at_; }
  friend bool operator<=(CountingIterator a, CountingIterator b) { return a.at_ <= b.at_; }
  friend bool operator>=(CountingIterator a, CountingIterator b) { return a.at_ >= b.at_; }

 private:
  T* at_ = nullptr;
};

template <class T>
class CountingVector : private std::vector<T> {
  using Base = std::vector<T>;

 public:
  using value_type = T;
  using iterator = CountingIterator<T>;
  using const_iterator = CountingIterator<const T>;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  using Base::clear;
  using Base::empty;
  using Base::pop_back;
  using Base::push_back;
  using Base::resize;
  using Base::size;

  T& operator[](std::size_t i) { return visit(Base::operator[](i)); }
  const T& operator[](std::size_t i) const { return visit(Base::operator[](i)); }
  T& front() { return visit(Base::front()); }
  const T& front() const { return visit(Base::front()); }
  T& back() { return visit(Base::back()); }
  const T& back() const { return visit(Base::back()); }

  iterator begin() { return iterator(Base::data()); }
  iterator end() { return iterator(Base::data() + size()); }
  const_iterator begin() const { return const_iterator(Base::data()); }
  const_iterator end() const { return const_iterator(Base::data() + size()); }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  iterator erase(const_iterator first, const_iterator last) {
    const auto at = Base::erase(Base::begin() + (first.base() - Base::data()), Base::begin() + (last.base() - Base::data()));
    return iterator(Base::data() + (at - Base::begin()));
  }
  iterator erase(const_iterator at) { return erase(at, at + 1); }
  iterator insert(const_iterator at, const T& value) {
    const auto i = Base::insert(Base::begin() + (at.base() - Base::data()), value);
    return iterator(Base::data() + (i - Base::begin()));
  }
};

struct CountingStorage {
  template <class T, class Tag>
  using List = CountingVector<T>;
  using Id = std::uint32_t;
  static constexpr bool kFlat = false;
};

}  // namespace fp8sm::test_support
