// A std::allocator whose resize() leaves new elements uninitialised, for buffers that are written in full right
// after they grow (a download of logits): value-initialising them first would write every byte twice.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace arach {

template <typename T>
class UninitializedAllocator : public std::allocator<T> {
 public:
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };

  UninitializedAllocator() noexcept = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}

  // Value-initialisation (resize, the size constructor) becomes default-initialisation: nothing for a float.
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// A vector of trivially constructible elements whose growth does not zero them.
template <typename T>
using UninitializedVector = std::vector<T, UninitializedAllocator<T>>;

}  // namespace arach
