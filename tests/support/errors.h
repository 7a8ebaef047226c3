// message_of: runs code that must throw E and returns its message, for tests of error texts.
#pragma once

#include <doctest/doctest.h>

#include <exception>
#include <string>

namespace tower::testing {

// Fails the test case when f does not throw E (or throws something else).
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw another exception: " << e.what());
  }
  FAIL("did not throw");
  return "";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace tower::testing
